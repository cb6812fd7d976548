//! Each lane's move for one role: one input per live lane, drawn
//! uniformly among the role's inputs legal in that lane. Three ways, by
//! the number of candidates (the role's inputs legal in some live lane):
//! bit-sliced counters for few ([`bit_sliced`]), and for many, lanes with
//! one legal input served all at once and the others by rejection
//! ([`by_lane`]: uniform draws over the candidates until one is legal in
//! the lane) or, where rejection would draw too often, by transposing the
//! candidates into a bitset per lane.

use super::{Word, LANES, LANE_BIT};
use crate::rng::Rng;

/// A role's candidates for one step: its legal words masked to the live
/// lanes, all of them in input order (a role with few inputs, most of
/// them legal in some lane), or only the nonzero ones with their inputs
/// (a role with many inputs, or mostly zero words).
#[derive(Clone, Debug, Default)]
pub(super) struct Candidates {
    words: Vec<Word>,
    /// Candidate `i`'s input: `first + i`, or `input[i]` when compacted.
    first: u32,
    input: Vec<u32>,
    compacted: bool,
    /// Lanes where at least one candidate is legal, and at least two.
    pub(super) any: Word,
    many: Word,
    /// Legal words gathered from scattered places.
    gathered: Vec<Word>,
}

/// Inputs up to which a role's legal words are all copied: a copy costs
/// less than skipping the zero words, and a state allows most of a small
/// role's inputs in some lane.
const COPY_ALL: usize = 512;

impl Candidates {
    /// Takes the legal words of inputs `first..` (`run`), masked to
    /// `live`, and notes which lanes have one legal input or more.
    pub(super) fn fill(&mut self, first: u32, run: &[Word], live: Word) {
        self.first = first;
        if run.len() > COPY_ALL {
            self.scan(run, live);
            return;
        }
        self.words.clear();
        self.words.extend(run.iter().map(|&w| w & live));
        self.compacted = false;
        let (mut any, mut many, mut zero) = (0 as Word, 0 as Word, 0usize);
        for &w in &self.words {
            many |= any & w;
            any |= w;
            zero += (w == 0) as usize;
        }
        (self.any, self.many) = (any, many);
        // Mostly zero words: keep only the nonzero ones, so that draws
        // and transposes do not visit them.
        if zero * 2 > self.words.len() {
            self.compact();
        }
    }

    /// [`Candidates::fill`] from words scattered in `words` (at `at`).
    pub(super) fn gather(&mut self, first: u32, words: &[Word], at: &[u32], live: Word) {
        let mut run = std::mem::take(&mut self.gathered);
        run.clear();
        run.extend(at.iter().map(|&w| words[w as usize]));
        self.fill(first, &run, live);
        self.gathered = run;
    }

    /// Takes the nonzero words of `run` masked to `live`, found eight
    /// words at a time (a large role's words are mostly zero).
    fn scan(&mut self, run: &[Word], live: Word) {
        self.words.clear();
        self.input.clear();
        self.compacted = true;
        let (mut any, mut many) = (0 as Word, 0 as Word);
        for (k, block) in run.chunks(8).enumerate() {
            let mut nonzero = block.iter().enumerate().fold(0u32, |m, (i, &w)| m | ((w & live != 0) as u32) << i);
            while nonzero != 0 {
                let i = nonzero.trailing_zeros() as usize;
                nonzero &= nonzero - 1;
                let w = block[i] & live;
                self.words.push(w);
                self.input.push(self.first + (8 * k + i) as u32);
                many |= any & w;
                any |= w;
            }
        }
        (self.any, self.many) = (any, many);
    }

    /// The inputs `inputs` (any order; their legal words at `at[i]` in
    /// `words`), masked to `live`: only the nonzero ones are kept.
    pub(super) fn pick_out(&mut self, inputs: &[u32], words: &[Word], at: &[u32], live: Word) {
        self.words.clear();
        self.input.clear();
        self.compacted = true;
        let (mut any, mut many) = (0 as Word, 0 as Word);
        for &i in inputs {
            let w = words[at[i as usize] as usize] & live;
            if w != 0 {
                self.words.push(w);
                self.input.push(i);
                many |= any & w;
                any |= w;
            }
        }
        (self.any, self.many) = (any, many);
    }

    /// Keeps only the nonzero words, noting their inputs.
    fn compact(&mut self) {
        self.input.clear();
        let mut k = 0;
        for i in 0..self.words.len() {
            let w = self.words[i];
            if w != 0 {
                self.words[k] = w;
                self.input.push(self.first + i as u32);
                k += 1;
            }
        }
        self.words.truncate(k);
        self.compacted = true;
    }

    fn len(&self) -> usize {
        self.words.len()
    }

    /// Candidate `i`'s input.
    fn input(&self, i: usize) -> u32 {
        if self.compacted {
            self.input[i]
        } else {
            self.first + i as u32
        }
    }

    /// The candidates' lanes as two `u64`s each (lanes 0-63 first).
    fn halves(&self) -> &[u64] {
        bytemuck::cast_slice(&self.words)
    }

    /// Lane `l`'s legal inputs, ascending.
    pub(super) fn of_lane(&self, l: usize) -> impl Iterator<Item = u32> + '_ {
        (0..self.len()).filter(move |&i| self.words[i] >> l & 1 == 1).map(|i| self.input(i))
    }
}

/// Where the chosen moves go: each input's word (`at[input]`), and the
/// words written this step, to be cleared before the next.
pub(super) struct Moves<'a> {
    pub(super) words: &'a mut [Word],
    pub(super) played: &'a mut Vec<u32>,
    pub(super) at: &'a [u32],
    /// Where each input played and its lanes are noted (safe-first).
    pub(super) log: Option<&'a mut Vec<(u32, Word)>>,
}

impl Moves<'_> {
    /// Lanes `lanes` (maybe none) play `input`.
    pub(super) fn play(&mut self, input: u32, lanes: Word) {
        let at = self.at[input as usize];
        self.words[at as usize] |= lanes;
        self.played.push(at);
        if let Some(log) = self.log.as_deref_mut().filter(|_| lanes != 0) {
            log.push((input, lanes));
        }
    }
}

/// Scratch memory of [`by_lane`].
#[derive(Clone, Debug)]
pub(super) struct Scratch {
    /// Candidates transposed, 64 at a time.
    t: Vec<[[u64; 2]; 64]>,
    /// Each lane's chosen candidate.
    pick: Picks,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch { t: Vec::new(), pick: [0; LANES] }
    }
}

/// Candidates up to which [`choose`] draws bit-sliced; above, lane by
/// lane ([`by_lane`]). Measured (`propel playouts --fast`, two runs
/// each): tic-tac-toe (10 candidates a role) 18.4M playouts/s bit-sliced
/// against 10.4-11.4M lane by lane, connect four (9) 5.4-5.6M against
/// 3.7-4.2M; breakthrough (about 150) 190k bit-sliced against 250k lane
/// by lane (then transposed, before rejection).
const BIT_SLICED_ROWS: usize = 32;

/// Chooses a move in every lane of `live` (each has a candidate).
pub(super) fn choose(c: &Candidates, live: Word, rng: &mut Rng, out: &mut Moves, scratch: &mut Scratch) {
    if c.len() <= BIT_SLICED_ROWS {
        bit_sliced(c, live, rng, out);
    } else {
        by_lane(c, live, rng, out, scratch);
    }
}

/// Bit-sliced: nothing is done lane by lane. The candidates are counted
/// into bit planes (plane `p`, lane `l`: bit `p` of lane `l`'s count);
/// each lane's draw `k` comes from random planes by rejection (bits above
/// the count's length cleared, redrawn where `k >= count`: exactly
/// uniform, half the lanes or more done per round); then the candidates
/// are walked once, each lane playing the candidate met when its `k`
/// reaches zero and counting `k` down at the others. Each candidate
/// costs a few word operations per plane for all 128 lanes.
fn bit_sliced(c: &Candidates, live: Word, rng: &mut Rng, out: &mut Moves) {
    if c.many & live == 0 {
        // One legal input per lane (a noop, or the only move): no draw.
        for (i, &w) in c.words.iter().enumerate() {
            if w != 0 {
                out.play(c.input(i), w);
            }
        }
        return;
    }
    let mut count = Planes::default();
    for &w in &c.words {
        count.increment(w);
    }
    let k = count.draw(live, rng);
    // Walk the candidates, counting each lane's draw down to its move.
    let (mut k, mut done) = (k, 0 as Word);
    for (i, &w) in c.words.iter().enumerate() {
        let here = w & !done;
        if here == 0 {
            continue;
        }
        let zero = here & !k.nonzero();
        if zero != 0 {
            out.play(c.input(i), zero);
            done |= zero;
            if done == live {
                break;
            }
        }
        k.decrement(here & !zero);
    }
}

/// Many candidates, lane by lane. Lanes with one legal candidate (the
/// waiting role's noop) play it, found for all of them in one pass. Each
/// other lane draws candidates uniformly until one is legal there
/// ([`by_rejection`]); where that would take many draws (few legal
/// inputs among many candidates), the candidates are transposed instead
/// ([`transposed`]).
fn by_lane(c: &Candidates, live: Word, rng: &mut Rng, out: &mut Moves, scratch: &mut Scratch) {
    let single = live & !c.many;
    if single != 0 {
        for (i, &w) in c.words.iter().enumerate() {
            // Rarely taken: single lanes mostly share one input (a noop).
            if w & single != 0 {
                out.play(c.input(i), w & single);
            }
        }
    }
    let multi = live & c.many;
    if multi == 0 {
        return;
    }
    // Per lane, rejection costs about its draws (n / legal, the mean
    // legal count taken for each lane's) plus one; the transpose, three
    // per 64 candidates, in units of a draw. Fitted to `propel playouts
    // --fast` with either way forced (RESULTS.md): rejection
    // wins on breakthrough (6 draws, 3 blocks), hex (2, 2) and speedChess
    // (32, 17), the transpose on reversi (7, 2), checkers (16, 2) and
    // pentago (3, 1).
    let (n, m) = (c.len() as u64, multi.count_ones() as u64);
    let legal = c.words.iter().map(|&w| (w & multi).count_ones() as u64).sum::<u64>().max(1);
    let by_draws = n * m + legal < 3 * n.div_ceil(64) * legal;
    let pick = &mut scratch.pick;
    if by_draws && n <= 1 << 16 {
        by_rejection(c.halves(), multi, rng, MAX_ROUNDS, pick);
    } else {
        transposed(c, multi, rng, &mut scratch.t, pick);
    }
    let mut a = multi;
    while a != 0 {
        let l = a.trailing_zeros() as usize;
        a &= a - 1;
        out.play(c.input(pick[l] as usize), LANE_BIT[l]);
    }
}

/// Each lane's chosen candidate (in [`by_lane`]).
type Picks = [u32; LANES];

/// Each lane of `lanes` (with two or more legal candidates) draws a
/// candidate uniformly until one is legal there (`col`: two `u64`s per
/// candidate, lanes 0-63 first), and notes it in `pick`: exactly uniform over the lane's legal inputs, with
/// neither a count nor a transpose. A draw is Lemire's multiply-shift on
/// 16 random bits with the few biased low parts rejected (exactly uniform
/// over the `n` candidates), four to a random word. The draws go in
/// rounds, one for each lane still drawing, and nothing branches on a
/// draw's outcome (a lane's acceptance clears its bit in the mask of
/// those drawing): a branch would be mispredicted about once per lane.
/// After `max_rounds` rounds the lanes still drawing count their legal
/// candidates and draw among them (exact either way: a fresh uniform
/// draw, whatever the rejected draws were).
fn by_rejection(col: &[u64], lanes: Word, rng: &mut Rng, max_rounds: u32, pick: &mut Picks) {
    let n = (col.len() / 2) as u32;
    let cut = (1u32 << 16) % n;
    let (mut r, mut left) = (0u64, 0u32);
    for h in 0..2 {
        let mut drawing = (lanes >> (64 * h)) as u64;
        for _ in 0..max_rounds {
            let mut a = drawing;
            while a != 0 {
                let b = a.trailing_zeros();
                a &= a - 1;
                if left == 0 {
                    (r, left) = (rng.next_u64(), 4);
                }
                let x = (r & 0xffff) as u32 * n;
                (r, left) = (r >> 16, left - 1);
                let i = x >> 16;
                let ok = (x & 0xffff >= cut) as u64 & col[2 * i as usize + h] >> b & 1;
                // Written at every draw: a lane's last draw is the one
                // accepted (a select here compiles to a branch).
                pick[64 * h + b as usize] = i;
                drawing &= !(ok << b);
            }
            if drawing == 0 {
                break;
            }
        }
        while drawing != 0 {
            let b = drawing.trailing_zeros();
            drawing &= drawing - 1;
            pick[64 * h + b as usize] = nth_legal(col, h, b, rng) as u32;
        }
    }
}

/// Rounds after which [`by_rejection`] counts instead (a lane with two
/// legal inputs among 200 candidates gives up after 512 draws once in
/// 170).
const MAX_ROUNDS: u32 = 512;

/// A uniform draw among the candidates whose lane `b` of half `h` is set.
fn nth_legal(col: &[u64], h: usize, b: u32, rng: &mut Rng) -> usize {
    let legal = || col.iter().skip(h).step_by(2).enumerate().filter(|&(_, &w)| w >> b & 1 == 1).map(|(i, _)| i);
    let k = rng.below(legal().count());
    legal().nth(k).unwrap_or(0)
}

/// Lane by lane through a transpose: the candidate rows transposed 64 at
/// a time into a bitset per lane, then for each lane of `lanes` a
/// popcount, a uniform draw and a select, noted in `pick`.
fn transposed(c: &Candidates, lanes: Word, rng: &mut Rng, t: &mut Vec<[[u64; 2]; 64]>, pick: &mut Picks) {
    t.clear();
    for rows in c.halves().chunks(128) {
        let mut block = [[0u64; 2]; 64];
        for (x, w) in block.iter_mut().zip(rows.chunks_exact(2)) {
            *x = [w[0], w[1]];
        }
        transpose64x2(&mut block);
        t.push(block);
    }
    for h in 0..2 {
        let mut a = (lanes >> (64 * h)) as u64;
        while a != 0 {
            let l = a.trailing_zeros() as usize;
            a &= a - 1;
            let count: u32 = t.iter().map(|b| b[l][h].count_ones()).sum();
            let mut k = if count == 1 { 0 } else { rng.below(count as usize) as u32 };
            let mut b = 0;
            while k >= t[b][l][h].count_ones() {
                k -= t[b][l][h].count_ones();
                b += 1;
            }
            let i = 64 * b + select(t[b][l][h], k) as usize;
            pick[64 * h + l] = i as u32;
        }
    }
}

/// Transposes two 64 x 64 bit matrices in place, side by side: bit `c`
/// of `a[r][h]` moves to bit `r` of `a[c][h]` (swapping ever smaller
/// off-diagonal blocks; the two matrices take the same operations, which
/// compile to vector code).
#[inline(never)]
fn transpose64x2(a: &mut [[u64; 2]; 64]) {
    #[allow(clippy::needless_range_loop, reason = "rows k and k + J of both halves: indices say it plainest")]
    fn stage<const J: usize>(a: &mut [[u64; 2]; 64], m: u64) {
        for base in (0..64).step_by(2 * J) {
            for k in base..base + J {
                for h in 0..2 {
                    let x = ((a[k][h] >> J) ^ a[k + J][h]) & m;
                    a[k][h] ^= x << J;
                    a[k + J][h] ^= x;
                }
            }
        }
    }
    stage::<32>(a, 0x0000_0000_ffff_ffff);
    stage::<16>(a, 0x0000_ffff_0000_ffff);
    stage::<8>(a, 0x00ff_00ff_00ff_00ff);
    stage::<4>(a, 0x0f0f_0f0f_0f0f_0f0f);
    stage::<2>(a, 0x3333_3333_3333_3333);
    stage::<1>(a, 0x5555_5555_5555_5555);
}

/// The position of the `k`-th set bit of `w` (from 0, lowest first);
/// `k` must be below `w.count_ones()`. Branch-free (Vigna's broadword
/// select): the byte holding the bit from byte-wise prefix counts, then
/// a table for the bit within the byte.
fn select(w: u64, k: u32) -> u32 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut s = w - ((w >> 1) & 0x5555_5555_5555_5555);
    s = (s & 0x3333_3333_3333_3333) + ((s >> 2) & 0x3333_3333_3333_3333);
    s = (s + (s >> 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    // Byte i of `sums`: the set bits of bytes 0..=i.
    let sums = s.wrapping_mul(ONES);
    // High bit of byte i set when sums[i] <= k; their count is the byte.
    let le = (((k as u64 * ONES) | HIGHS) - sums) & HIGHS;
    let place = le.count_ones() * 8;
    let below = ((sums << 8) >> place) as u32 & 0xff;
    place + SELECT_IN_BYTE[(((w >> place) & 0xff) as usize) << 3 | (k - below) as usize] as u32
}

/// `SELECT_IN_BYTE[b * 8 + k]`: the position of the `k`-th set bit of byte `b`.
const SELECT_IN_BYTE: [u8; 2048] = {
    let mut t = [0u8; 2048];
    let mut b = 0;
    while b < 256 {
        let (mut k, mut i) = (0, 0);
        while i < 8 {
            if b >> i & 1 == 1 {
                t[b * 8 + k] = i as u8;
                k += 1;
            }
            i += 1;
        }
        b += 1;
    }
    t
};

/// A bit-sliced counter per lane: bit `p` of lane `l`'s value is bit `l`
/// of `planes[p]`; `used` planes hold nonzero bits.
#[derive(Clone, Copy, Default)]
struct Planes {
    planes: [Word; PLANES],
    used: usize,
}

/// Planes of a [`Planes`]: enough to count [`BIT_SLICED_ROWS`] candidates
/// (few, so that copies and clears of a counter cost little).
const PLANES: usize = 6;
const _: () = assert!(BIT_SLICED_ROWS < 1 << PLANES);

impl Planes {
    /// Adds 1 in the lanes of `w`.
    fn increment(&mut self, w: Word) {
        let mut carry = w;
        let mut p = 0;
        while carry != 0 {
            let c = self.planes[p] & carry;
            self.planes[p] ^= carry;
            carry = c;
            p += 1;
        }
        self.used = self.used.max(p);
    }

    /// Subtracts 1 in the lanes of `w` (each nonzero there).
    fn decrement(&mut self, w: Word) {
        let mut borrow = w;
        let mut p = 0;
        while borrow != 0 && p < self.used {
            let b = !self.planes[p] & borrow;
            self.planes[p] ^= borrow;
            borrow = b;
            p += 1;
        }
    }

    /// The lanes whose value is nonzero.
    fn nonzero(&self) -> Word {
        self.planes[..self.used].iter().fold(0, |a, &p| a | p)
    }

    /// A value drawn uniformly in `0..self` for each lane of `live` (each
    /// nonzero there): random bits below the length of `self - 1`, drawn
    /// again in the lanes where they came to `self` or more, for up to
    /// [`FULL_ROUNDS`] rounds; then a draw lane by lane.
    #[allow(clippy::needless_range_loop, reason = "planes p of k, mask and self side by side")]
    fn draw(&self, live: Word, rng: &mut Rng) -> Planes {
        let used = self.used;
        // Below: self - 1; then `mask[p]`: lanes whose self - 1 has a bit
        // at p or above (so bit p of the draw may be set).
        let mut below = *self;
        below.decrement(live);
        let mut mask = [0 as Word; PLANES];
        let mut above: Word = 0;
        for p in (0..used).rev() {
            above |= below.planes[p];
            mask[p] = above;
        }
        let mut k = Planes { planes: [0; PLANES], used };
        let mut pending = live;
        for _ in 0..FULL_ROUNDS {
            for p in 0..used {
                let r = (rng.next_u64() as Word) << 64 | rng.next_u64() as Word;
                k.planes[p] = (k.planes[p] & !pending) | (r & mask[p] & pending);
            }
            // Lanes where k < self, from the top plane down.
            let (mut less, mut equal): (Word, Word) = (0, !0);
            for p in (0..used).rev() {
                less |= equal & !k.planes[p] & self.planes[p];
                equal &= !(k.planes[p] ^ self.planes[p]);
            }
            pending &= !less;
            if pending == 0 {
                return k;
            }
        }
        // The few lanes left (the last of 128 would take many rounds):
        // a fresh uniform draw each, lane by lane.
        let mut a = pending;
        while a != 0 {
            let l = a.trailing_zeros() as usize;
            a &= a - 1;
            let count = (0..used).fold(0, |v, p| v | ((self.planes[p] >> l & 1) as usize) << p);
            let v = rng.below(count);
            for p in 0..used {
                let bit = LANE_BIT[l];
                k.planes[p] = if v >> p & 1 == 1 { k.planes[p] | bit } else { k.planes[p] & !bit };
            }
        }
        k
    }
}

/// Rounds of bit-sliced draws for all lanes before the lanes still
/// drawing draw one by one ([`Planes::draw`]).
const FULL_ROUNDS: usize = 3;

#[cfg(test)]
#[allow(clippy::needless_range_loop, reason = "tests compare row r, column c, lane l of several tables by index")]
pub(super) mod tests {
    use super::super::each_lane;
    use super::*;

    #[test]
    fn transpose_and_select_match_naive() {
        let mut rng = Rng::new(11);
        for _ in 0..20 {
            let mut a = [[0u64; 2]; 64];
            for x in a.iter_mut().flatten() {
                *x = rng.next_u64() & rng.next_u64();
            }
            let mut t = a;
            transpose64x2(&mut t);
            for h in 0..2 {
                for r in 0..64 {
                    for c in 0..64 {
                        assert_eq!(a[r][h] >> c & 1, t[c][h] >> r & 1, "half {h} row {r} column {c}");
                    }
                }
            }
            for &w in a.iter().map(|x| &x[0]) {
                let bits: Vec<u32> = (0..64).filter(|&i| w >> i & 1 == 1).collect();
                for (k, &b) in bits.iter().enumerate() {
                    assert_eq!(select(w, k as u32), b);
                }
            }
        }
    }

    /// Bit-sliced counts and draws: each lane's count is its number of
    /// increments, and draws stay below it.
    #[test]
    fn planes_count_and_draw_below_the_count() {
        let mut rng = Rng::new(11);
        for _ in 0..50 {
            let mut planes = Planes::default();
            let mut counts = [0u32; LANES];
            for _ in 0..1 + rng.below(BIT_SLICED_ROWS) {
                let w = (rng.next_u64() as Word) << 64 | rng.next_u64() as Word;
                planes.increment(w);
                each_lane(w, |l| counts[l] += 1);
            }
            let value = |p: &Planes, l: usize| (0..p.used).fold(0u32, |v, b| v | ((p.planes[b] >> l & 1) as u32) << b);
            let live = (0..LANES).filter(|&l| counts[l] > 0).fold(0 as Word, |w, l| w | 1 << l);
            for l in 0..LANES {
                assert_eq!(value(&planes, l), counts[l]);
            }
            let k = planes.draw(live, &mut rng);
            each_lane(live, |l| assert!(value(&k, l) < counts[l], "lane {l}"));
            assert_eq!(planes.nonzero(), live);
        }
    }

    /// Candidates `0..n`, lane `l` legal at `legal(j, l)`.
    fn candidates(n: usize, legal: impl Fn(usize, usize) -> bool) -> Candidates {
        let mut c = Candidates::default();
        let word = |j| (0..LANES).filter(|&l| legal(j, l)).fold(0 as Word, |w, l| w | 1 << l);
        let run: Vec<Word> = (0..n).map(word).collect();
        c.fill(0, &run, !0);
        c
    }

    /// Each strategy, run alone, plays exactly one legal input per lane
    /// and draws each of a lane's legal inputs about equally often:
    /// lanes with 2 to 40 legal inputs among 150 candidates (rejection
    /// with its count fallback forced by a low draw limit, too, and the
    /// transpose), and 1 to 11 among 12 (bit-sliced).
    #[test]
    fn every_strategy_draws_uniformly() {
        type Strategy = fn(&Candidates, &mut Rng, &mut Moves, &mut Scratch);
        fn lane_by_lane(
            c: &Candidates,
            out: &mut Moves,
            s: &mut Scratch,
            f: impl FnOnce(&Candidates, &mut Picks, &mut Vec<[[u64; 2]; 64]>),
        ) {
            f(c, &mut s.pick, &mut s.t);
            for (l, &i) in s.pick.iter().enumerate() {
                out.play(c.input(i as usize), LANE_BIT[l]);
            }
        }
        let rejection: Strategy =
            |c, rng, out, s| lane_by_lane(c, out, s, |c, x, _| by_rejection(c.halves(), !0, rng, MAX_ROUNDS, x));
        let counting: Strategy =
            |c, rng, out, s| lane_by_lane(c, out, s, |c, x, _| by_rejection(c.halves(), !0, rng, 3, x));
        let transpose: Strategy = |c, rng, out, s| lane_by_lane(c, out, s, |c, x, t| transposed(c, !0, rng, t, x));
        let sliced: Strategy = |c, rng, out, _| bit_sliced(c, !0, rng, out);
        let cases: [(&str, Strategy, usize, usize); 4] = [
            ("rejection", rejection, 150, 39),
            ("counting", counting, 150, 39),
            ("transposed", transpose, 150, 39),
            ("bit-sliced", sliced, 12, 11),
        ];
        for (name, strategy, n, spread) in cases {
            // Lane l may play inputs (l % spread) + 1 of 0..n spread
            // evenly, and the last input.
            let legal = |j: usize, l: usize| j == n - 1 || (j * (l % spread + 1)) % n < l % spread + 1;
            let c = candidates(n, legal);
            let at: Vec<u32> = (0..n as u32).collect();
            let mut words = vec![0 as Word; n];
            let mut scratch = Scratch::default();
            let mut played = Vec::new();
            let mut rng = Rng::new(5);
            let rounds = 3000;
            let mut hits = vec![[0u32; LANES]; n];
            for _ in 0..rounds {
                words.fill(0);
                strategy(
                    &c,
                    &mut rng,
                    &mut Moves { words: &mut words, played: &mut played, at: &at, log: None },
                    &mut scratch,
                );
                assert_eq!(
                    words.iter().map(|w| w.count_ones()).sum::<u32>(),
                    LANES as u32,
                    "{name}: one move per lane"
                );
                for (j, h) in hits.iter_mut().enumerate() {
                    each_lane(words[j], |l| h[l] += 1);
                }
            }
            assert_uniform(name, &hits, rounds, legal);
        }
    }

    /// Each lane drew each of its legal inputs (`legal(input, lane)`)
    /// about equally often in `rounds` draws (`hits[input][lane]`), within
    /// five standard deviations, and never an illegal one.
    pub(in crate::lanes) fn assert_uniform(
        name: &str,
        hits: &[[u32; LANES]],
        rounds: u32,
        legal: impl Fn(usize, usize) -> bool,
    ) {
        let n = hits.len();
        for l in 0..LANES {
            let k = (0..n).filter(|&j| legal(j, l)).count() as f64;
            let (p, sd) = (rounds as f64 / k, (rounds as f64 * (1.0 / k) * (1.0 - 1.0 / k)).sqrt());
            for j in 0..n {
                let h = hits[j][l] as f64;
                if legal(j, l) {
                    assert!((h - p).abs() <= 5.0 * sd + 1.0, "{name}: lane {l} input {j}: {h} draws, expected {p:.0}");
                } else {
                    assert_eq!(h, 0.0, "{name}: lane {l} played illegal input {j}");
                }
            }
        }
    }
}
