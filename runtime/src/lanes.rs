//! Many random playouts at once on bit-parallel native code (see
//! [`propel_compiler::lower::lanes`] and the plan, [`propel_abi::lanes`]): 128 lanes, one bit per playout in
//! each word. The generated code evaluates the network for all lanes; this
//! driver picks each lane's moves, ends the lanes whose game is over
//! (reading their goals) and refills them with the next playout.
//!
//! Moves are drawn in a fixed order (per step: roles in order, then lanes
//! in ascending order), so a seed gives the same results on every machine
//! that evaluates the same plan.

use crate::rng::Rng;
use propel_abi::LanePlan;
use propel_compiler::propnet::{Evaluator, Propnet};

pub use propel_abi::LANES;

/// One component's word: bit `l` is lane `l` (the generated code reads it
/// as two `u64`s, lanes 0-63 first, which is how a little-endian `u128`
/// lies in memory).
pub type Word = u128;

const _: () = assert!(Word::BITS as usize == LANES && cfg!(target_endian = "little"));

/// What evaluates the network for all lanes: generated code, or a
/// reference evaluator in tests.
pub trait LaneEval {
    /// Every gate the terminal, legal and goal outputs read, from the bases.
    fn state(&mut self, words: &mut [Word]);
    /// The gates of the next-state outputs, from the bases and inputs.
    fn next(&mut self, words: &mut [Word]);
    /// The goal network (only called when the plan has one).
    fn goals(&mut self, words: &mut [Word]);
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaneError {
    #[error("a role has no legal move in a non-terminal state")]
    NoLegalMove,
    #[error("a playout went on for more than {0} steps")]
    TooLong(u32),
}

/// What a lane gets when it is free (see [`LaneSource::next_start`]).
pub enum Refill<'a> {
    /// A playout from this state (one bit per base).
    Start(&'a [u64]),
    /// A playout from `parent` whose first joint move is `joint` (one
    /// input per role, in role order; it must be legal): the lane computes
    /// the child and tells [`LaneSource::expanded`] what it found there
    /// before playing on (a search expands its tree on the lanes).
    Expand { parent: &'a [u64], joint: &'a [u32] },
    /// Nothing now: the lane idles this step and asks again at the next.
    Later,
    /// Nothing more: the run ends once every lane's game has ended.
    Stop,
}

/// Where a streaming lane run ([`Lanes::stream`]) gets the start states
/// of its playouts and delivers their results, lane by lane: a lane plays
/// one playout at a time, so the source can keep what it needs per lane.
pub trait LaneSource {
    /// What lane `lane`, now free, plays next.
    fn next_start(&mut self, lane: usize) -> Refill<'_>;
    /// The playout of lane `lane` ended after `length` steps with these
    /// goals (per role: the largest value given, -1 if none).
    fn finished(&mut self, lane: usize, goals: &[i32], length: u32);
    /// The child state of lane `lane`'s [`Refill::Expand`] (one bit per
    /// base), whether it is terminal, and (when it is not) each role's
    /// legal inputs there in ascending order. Comes before the lane's
    /// [`LaneSource::finished`].
    fn expanded(&mut self, _lane: usize, _child: &[u64], _terminal: bool, _legal: &[Vec<u32>]) {}
}

/// Per-thread memory of the lane driver.
#[derive(Clone, Debug)]
pub struct Lanes {
    words: Vec<Word>,
    /// The next state's words, gathered before they are written (a next
    /// output may itself be a base).
    next: Vec<Word>,
    /// This role's inputs legal in some lane: (input, lanes).
    legal: Vec<(u32, Word)>,
    /// The input words set this step (cleared before the next).
    played: Vec<u32>,
    /// Candidates transposed, 64 at a time ([`Lanes::choose_by_lane`]).
    t: Vec<[[u64; 2]; 64]>,
    /// The step each lane's playout started at.
    started: [u32; LANES],
    /// Lanes whose next move is given ([`Refill::Expand`]), and each such
    /// lane's joint move (`roles` inputs from `lane * roles`).
    forced: Word,
    joint: Vec<u32>,
    /// Lanes that played a given move last step: their state is the child
    /// to report; and each one's legal inputs per role (`lane * roles + role`).
    fresh: Word,
    fresh_moves: Vec<Vec<u32>>,
    /// A reported child's bits.
    child: Vec<u64>,
    /// Lanes waiting for the state in `staged_bits` ([`Lanes::stage`]).
    staged: Word,
    staged_bits: Vec<u64>,
    /// Goals of one ended lane, per role.
    goals: Vec<i32>,
    /// Whether the plan's legal words lie in one run in input order (as
    /// generated code puts them), so that a role's are scanned as a slice.
    dense_legal: bool,
}

impl Lanes {
    pub fn new(plan: &LanePlan) -> Lanes {
        let mut words: Vec<Word> = vec![0; plan.words as usize];
        for &w in &plan.ones {
            words[w as usize] = !0;
        }
        Lanes {
            words,
            next: vec![0; plan.base.len()],
            legal: Vec::new(),
            played: Vec::new(),
            t: Vec::new(),
            started: [0; LANES],
            forced: 0,
            joint: Vec::new(),
            fresh: 0,
            fresh_moves: Vec::new(),
            child: Vec::new(),
            staged: 0,
            staged_bits: Vec::new(),
            goals: Vec::new(),
            dense_legal: plan.legal.windows(2).all(|p| p[1] == p[0] + 1),
        }
    }

    /// Puts state `bits` (one bit per base) into lane `l`: at once with
    /// the lanes before it when they start from the same state (as all
    /// playouts from one position do), else after them
    /// ([`Lanes::load_staged`]).
    fn stage(&mut self, plan: &LanePlan, l: usize, bits: &[u64]) {
        if self.staged != 0 && self.staged_bits[..] != *bits {
            self.load_staged(plan);
        }
        if self.staged == 0 {
            self.staged_bits.clear();
            self.staged_bits.extend_from_slice(bits);
        }
        self.staged |= LANE_BIT[l];
    }

    /// Puts the staged state into the staged lanes.
    fn load_staged(&mut self, plan: &LanePlan) {
        let m = std::mem::take(&mut self.staged);
        if m == 0 {
            return;
        }
        let bits = &self.staged_bits;
        for (ws, &b) in plan.base.chunks(64).zip(bits.iter().chain(std::iter::repeat(&0))) {
            for (i, &w) in ws.iter().enumerate() {
                let x = &mut self.words[w as usize];
                *x = (*x & !m) | (0u128.wrapping_sub((b >> i & 1) as Word) & m);
            }
        }
    }

    /// Runs `count` random playouts, playout `p` from state `start(p)`.
    /// Writes each playout's length to `lengths[p]` and each role's goal
    /// (the largest value given; -1 if none) to `goals[p * roles + r]`.
    /// `role_range[r]`: role `r`'s inputs, `first..end`.
    #[allow(clippy::too_many_arguments)]
    pub fn run<'s>(
        &mut self,
        plan: &LanePlan,
        eval: &mut impl LaneEval,
        role_range: &[(u32, u32)],
        start: impl Fn(usize) -> &'s [u64],
        count: usize,
        seed: u64,
        max_steps: u32,
        goals: &mut [i32],
        lengths: &mut [u32],
    ) -> Result<(), LaneError> {
        let roles = role_range.len();
        assert!(goals.len() >= count * roles && lengths.len() >= count, "output buffers too small");
        struct Fixed<'a, 's, F> {
            start: F,
            count: usize,
            next: usize,
            roles: usize,
            /// Each lane's playout.
            playout: [usize; LANES],
            goals: &'a mut [i32],
            lengths: &'a mut [u32],
            _s: std::marker::PhantomData<&'s ()>,
        }
        impl<'s, F: Fn(usize) -> &'s [u64]> LaneSource for Fixed<'_, 's, F> {
            fn next_start(&mut self, lane: usize) -> Refill<'_> {
                if self.next == self.count {
                    return Refill::Stop;
                }
                self.playout[lane] = self.next;
                self.next += 1;
                Refill::Start((self.start)(self.next - 1))
            }
            fn finished(&mut self, lane: usize, goals: &[i32], length: u32) {
                let p = self.playout[lane];
                self.lengths[p] = length;
                self.goals[p * self.roles..(p + 1) * self.roles].copy_from_slice(goals);
            }
        }
        let mut source =
            Fixed { start, count, next: 0, roles, playout: [0; LANES], goals, lengths, _s: std::marker::PhantomData };
        self.stream(plan, eval, role_range, &mut source, seed, max_steps)
    }

    /// Runs random playouts as `source` hands out their start states, a
    /// lane refilled as soon as its game ends, until the source says
    /// [`Refill::Stop`] and every lane's game has ended.
    pub fn stream(
        &mut self,
        plan: &LanePlan,
        eval: &mut impl LaneEval,
        role_range: &[(u32, u32)],
        source: &mut impl LaneSource,
        seed: u64,
        max_steps: u32,
    ) -> Result<(), LaneError> {
        let roles = role_range.len();
        self.goals.resize(roles, -1);
        self.joint.resize(LANES * roles, 0);
        self.fresh_moves.resize_with(LANES * roles, Vec::new);
        (self.forced, self.fresh) = (0, 0);
        let mut rng = Rng::new(seed);
        let mut active: Word = 0;
        let mut step = 0u32;
        // The earliest start among active lanes (a lower bound), for the
        // step limit.
        let mut oldest = 0u32;
        let mut stopped = false;
        loop {
            let mut free = !active;
            while free != 0 && !stopped {
                let l = free.trailing_zeros() as usize;
                free &= free - 1;
                match source.next_start(l) {
                    Refill::Start(bits) => {
                        self.stage(plan, l, bits);
                        self.started[l] = step;
                        active |= LANE_BIT[l];
                    }
                    Refill::Expand { parent, joint } => {
                        self.stage(plan, l, parent);
                        self.joint[l * roles..(l + 1) * roles].copy_from_slice(&joint[..roles]);
                        self.forced |= LANE_BIT[l];
                        self.started[l] = step;
                        active |= LANE_BIT[l];
                    }
                    Refill::Later => {}
                    Refill::Stop => stopped = true,
                }
            }
            self.load_staged(plan);
            if active == 0 {
                if stopped {
                    return Ok(());
                }
                // Every lane idle, the source has nothing yet: ask again.
                continue;
            }
            eval.state(&mut self.words);
            let ended = self.words[plan.terminal as usize] & active;
            let fresh = std::mem::take(&mut self.fresh) & active;
            if ended != 0 {
                self.report_children(plan, fresh & ended, true, roles, source);
                self.finish(plan, eval, ended, step, source);
                active &= !ended;
                if active == 0 {
                    continue;
                }
            }
            if step - oldest >= max_steps {
                oldest = self.oldest(active);
                if step - oldest >= max_steps {
                    return Err(LaneError::TooLong(max_steps));
                }
            }
            for w in self.played.drain(..) {
                self.words[w as usize] = 0;
            }
            let (forced, fresh) = (self.forced & active, fresh & !ended);
            for (r, &(lo, hi)) in role_range.iter().enumerate() {
                self.choose(plan, lo as usize..hi as usize, active & !forced, fresh, r, roles, &mut rng)?;
            }
            self.play_forced(plan, forced, roles);
            self.report_children(plan, fresh, false, roles, source);
            (self.forced, self.fresh) = (0, forced);
            eval.next(&mut self.words);
            for (x, &w) in self.next.iter_mut().zip(&plan.next) {
                *x = self.words[w as usize];
            }
            for (&x, &w) in self.next.iter().zip(&plan.base) {
                self.words[w as usize] = x;
            }
            step += 1;
        }
    }

    /// Writes the given joint move of each lane in `forced`.
    fn play_forced(&mut self, plan: &LanePlan, forced: Word, roles: usize) {
        let mut f = forced;
        while f != 0 {
            let l = f.trailing_zeros() as usize;
            f &= f - 1;
            for &j in &self.joint[l * roles..(l + 1) * roles] {
                let at = plan.input[j as usize];
                if self.words[at as usize] == 0 {
                    self.played.push(at);
                }
                self.words[at as usize] |= LANE_BIT[l];
            }
        }
    }

    /// Tells `source` the state of each lane in `lanes` (children of
    /// [`Refill::Expand`]), terminal or with its legal inputs.
    fn report_children(
        &mut self,
        plan: &LanePlan,
        lanes: Word,
        terminal: bool,
        roles: usize,
        source: &mut impl LaneSource,
    ) {
        let mut f = lanes;
        while f != 0 {
            let l = f.trailing_zeros() as usize;
            f &= f - 1;
            let (h, b) = (l / 64, l % 64);
            let halves: &[u64] = bytemuck::cast_slice(&self.words[..]);
            self.child.clear();
            self.child.extend(plan.base.chunks(64).map(|ws| {
                ws.iter().enumerate().fold(0u64, |x, (i, &w)| x | (halves[2 * w as usize + h] >> b & 1) << i)
            }));
            let legal = if terminal { &[][..] } else { &self.fresh_moves[l * roles..(l + 1) * roles] };
            source.expanded(l, &self.child, terminal, legal);
        }
    }

    /// The earliest step at which a lane of `active` started.
    fn oldest(&self, active: Word) -> u32 {
        (0..LANES).filter(|&l| active >> l & 1 == 1).map(|l| self.started[l]).min().unwrap_or(0)
    }

    /// Reports the lanes in `ended` (terminal at `step`) to `source`.
    fn finish(
        &mut self,
        plan: &LanePlan,
        eval: &mut impl LaneEval,
        ended: Word,
        step: u32,
        source: &mut impl LaneSource,
    ) {
        if plan.goal_net {
            eval.goals(&mut self.words);
        }
        let mut e = ended;
        while e != 0 {
            let l = e.trailing_zeros() as usize;
            e &= e - 1;
            self.goals.fill(-1);
            for &(role, value, w) in &plan.goals {
                if self.words[w as usize] >> l & 1 == 1 {
                    let g = &mut self.goals[role as usize];
                    *g = (*g).max(value as i32);
                }
            }
            source.finished(l, &self.goals, step - self.started[l]);
        }
    }

    /// One role's move in every lane of `live`, drawn uniformly among the
    /// lane's legal inputs, bit-sliced: nothing is done lane by lane. The
    /// role's inputs legal in some live lane (the candidates) are counted
    /// into bit planes (plane `p`, lane `l`: bit `p` of lane `l`'s count);
    /// each lane's draw `k` comes from random planes by rejection (bits
    /// above the count's length cleared, redrawn where `k >= count`:
    /// exactly uniform, half the lanes or more done per round); then the
    /// candidates are walked once, each lane playing the candidate met
    /// when its `k` reaches zero and counting `k` down at the others.
    /// Words played are written as they are found.
    ///
    /// Each candidate costs a few word operations per plane for all 128
    /// lanes; choosing lane by lane (transposing the candidates into a
    /// bitset per lane, then a popcount, a draw and a select per lane)
    /// cost about ten times more per step on connect four.
    ///
    /// For each lane of `fresh`, also records its legal inputs of role
    /// `role` (of `roles`) in `fresh_moves`, in ascending order.
    #[allow(clippy::too_many_arguments)]
    fn choose(
        &mut self,
        plan: &LanePlan,
        inputs: std::ops::Range<usize>,
        live: Word,
        fresh: Word,
        role: usize,
        roles: usize,
        rng: &mut Rng,
    ) -> Result<(), LaneError> {
        let Lanes { words, legal, played, dense_legal, fresh_moves, t, .. } = self;
        legal.clear();
        if live == 0 {
            return Ok(());
        }
        let run = plan.legal.get(inputs.start).filter(|_| *dense_legal);
        match run.and_then(|&at| words.get(at as usize..at as usize + inputs.len())) {
            // Generated code copies the legal words into one run: scan it
            // eight words at a time, visiting only the words some live lane
            // may play (most of a role's inputs are illegal in every lane).
            Some(run) => {
                for (k, block) in run.chunks(8).enumerate() {
                    let mut nonzero =
                        block.iter().enumerate().fold(0u32, |m, (i, &w)| m | ((w & live != 0) as u32) << i);
                    while nonzero != 0 {
                        let i = nonzero.trailing_zeros() as usize;
                        nonzero &= nonzero - 1;
                        legal.push(((inputs.start + 8 * k + i) as u32, block[i] & live));
                    }
                }
            }
            None => {
                for j in inputs {
                    let w = words[plan.legal[j] as usize] & live;
                    if w != 0 {
                        legal.push((j as u32, w));
                    }
                }
            }
        }
        let union = legal.iter().fold(0, |u, &(_, w)| u | w);
        if union != live {
            return Err(LaneError::NoLegalMove);
        }
        each_lane(fresh, |l| {
            let moves = &mut fresh_moves[l * roles + role];
            moves.clear();
            moves.extend(legal.iter().filter(|&&(_, w)| w >> l & 1 == 1).map(|&(j, _)| j));
        });
        // One candidate (a role with only a noop): every live lane plays it.
        if let [(j, _)] = legal[..] {
            let at = plan.input[j as usize];
            words[at as usize] = live;
            played.push(at);
            return Ok(());
        }
        if legal.len() > BIT_SLICED_ROWS {
            Self::choose_by_lane(plan, legal, live, rng, words, played, t);
            return Ok(());
        }
        let mut count = Planes::default();
        for &(_, w) in legal.iter() {
            count.increment(w);
        }
        let k = count.draw(live, rng);
        // Walk the candidates, counting each lane's draw down to its move.
        let (mut k, mut done) = (k, 0 as Word);
        for &(j, w) in legal.iter() {
            let here = w & !done;
            if here == 0 {
                continue;
            }
            let zero = here & !k.nonzero();
            if zero != 0 {
                let at = plan.input[j as usize];
                words[at as usize] |= zero;
                played.push(at);
                done |= zero;
                if done == live {
                    break;
                }
            }
            k.decrement(here & !zero);
        }
        Ok(())
    }

    /// [`Lanes::choose`] lane by lane, for many candidates: the candidate
    /// rows transposed 64 at a time into a bitset per lane, then for each
    /// lane a popcount, a uniform draw and a select. A bit-sliced walk
    /// costs several word operations per plane and candidate (for all
    /// lanes); this, a fixed ~2,700 per 64 candidates and ~30 per lane.
    fn choose_by_lane(
        plan: &LanePlan,
        legal: &[(u32, Word)],
        live: Word,
        rng: &mut Rng,
        words: &mut [Word],
        played: &mut Vec<u32>,
        t: &mut Vec<[[u64; 2]; 64]>,
    ) {
        t.clear();
        for rows in legal.chunks(64) {
            let mut block = [[0u64; 2]; 64];
            for (x, &(_, w)) in block.iter_mut().zip(rows) {
                *x = [w as u64, (w >> 64) as u64];
            }
            transpose64x2(&mut block);
            t.push(block);
        }
        for h in 0..2 {
            let mut a = (live >> (64 * h)) as u64;
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
                let (j, _) = legal[64 * b + select(t[b][l][h], k) as usize];
                let at = plan.input[j as usize] as usize;
                if words[at] == 0 {
                    played.push(at as u32);
                }
                words[at] |= LANE_BIT[64 * h + l];
            }
        }
    }
}

/// Candidates up to which [`Lanes::choose`] draws bit-sliced; above, lane
/// by lane ([`Lanes::choose_by_lane`]). Measured (`propel playouts
/// --fast`): connect four (9 candidates a role) 4.0M playouts/s bit-sliced
/// against 1.7M lane by lane; breakthrough (about 150) 190k against 250k.
const BIT_SLICED_ROWS: usize = 32;

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
    planes: [Word; 32],
    used: usize,
}

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
    /// again in the lanes where they came to `self` or more.
    #[allow(clippy::needless_range_loop, reason = "planes p of k, mask and self side by side")]
    fn draw(&self, live: Word, rng: &mut Rng) -> Planes {
        let used = self.used;
        // Below: self - 1; then `mask[p]`: lanes whose self - 1 has a bit
        // at p or above (so bit p of the draw may be set).
        let mut below = *self;
        below.decrement(live);
        let mut mask = [0 as Word; 32];
        let mut above: Word = 0;
        for p in (0..used).rev() {
            above |= below.planes[p];
            mask[p] = above;
        }
        let mut k = Planes { planes: [0; 32], used };
        let mut pending = live;
        while pending != 0 {
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
        }
        k
    }
}

/// Calls `f` with each lane of `lanes`, in ascending order.
fn each_lane(mut lanes: Word, mut f: impl FnMut(usize)) {
    while lanes != 0 {
        f(lanes.trailing_zeros() as usize);
        lanes &= lanes - 1;
    }
}

/// `LANE_BIT[l]`: the word with only lane `l` set (a table: a `u128`
/// shift by a variable amount costs several instructions).
const LANE_BIT: [Word; LANES] = {
    let mut t = [0; LANES];
    let mut l = 0;
    while l < LANES {
        t[l] = 1 << l;
        l += 1;
    }
    t
};

/// A reference [`LaneEval`] for tests and `propel compare`: evaluates
/// each lane from scratch with [`Evaluator`] (slow: one evaluation of the
/// whole network per lane and phase) and writes the words the
/// driver reads: terminal, legal, goals, next.
pub struct Reference<'a> {
    net: &'a Propnet,
    goal_net: Option<&'a Propnet>,
    plan: &'a LanePlan,
    order: Evaluator,
    goal_order: Option<Evaluator>,
    val: Vec<bool>,
}

impl<'a> Reference<'a> {
    pub fn new(net: &'a Propnet, goal_net: Option<&'a Propnet>, plan: &'a LanePlan) -> Self {
        let goal_order = goal_net.map(Evaluator::new);
        Reference { net, goal_net, plan, order: Evaluator::new(net), goal_order, val: Vec::new() }
    }
}

fn bit(words: &[Word], w: u32, l: usize) -> bool {
    words[w as usize] >> l & 1 == 1
}

fn put(words: &mut [Word], w: u32, l: usize, v: bool) {
    let m: Word = 1 << l;
    words[w as usize] = if v { words[w as usize] | m } else { words[w as usize] & !m };
}

impl Reference<'_> {
    fn bases(&self, words: &[Word], l: usize) -> Vec<bool> {
        self.plan.base.iter().map(|&w| bit(words, w, l)).collect()
    }
}

impl LaneEval for Reference<'_> {
    fn state(&mut self, words: &mut [Word]) {
        for l in 0..LANES {
            let bases = self.bases(words, l);
            self.order.eval(self.net, &bases, &vec![false; self.net.inputs.len()], &mut self.val);
            let val = &self.val;
            put(words, self.plan.terminal, l, val[self.net.terminal as usize]);
            for (j, inp) in self.net.inputs.iter().enumerate() {
                put(words, self.plan.legal[j], l, val[inp.legal as usize]);
            }
            if self.goal_net.is_none() {
                for (g, &(_, _, w)) in self.net.goals.iter().zip(&self.plan.goals) {
                    put(words, w, l, val[g.comp as usize]);
                }
            }
        }
    }

    fn next(&mut self, words: &mut [Word]) {
        for l in 0..LANES {
            let inputs: Vec<bool> = self.plan.input.iter().map(|&w| bit(words, w, l)).collect();
            let bases = self.bases(words, l);
            self.order.eval(self.net, &bases, &inputs, &mut self.val);
            let val = &self.val;
            let next: Vec<bool> = self.net.bases.iter().map(|b| val[b.next as usize]).collect();
            for (&w, v) in self.plan.next.iter().zip(next) {
                put(words, w, l, v);
            }
        }
    }

    fn goals(&mut self, words: &mut [Word]) {
        let (Some(g), Some(order)) = (self.goal_net, &self.goal_order) else { return };
        for l in 0..LANES {
            let bases = self.bases(words, l);
            order.eval(g, &bases, &vec![false; g.inputs.len()], &mut self.val);
            let val = &self.val;
            for (x, &(_, _, w)) in g.goals.iter().zip(&self.plan.goals) {
                put(words, w, l, val[x.comp as usize]);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::needless_range_loop, reason = "tests compare row r, column c, lane l of several tables by index")]
mod tests {
    use super::*;

    /// A two-lane toy: one base that flips each step; terminal when it
    /// holds; one role with two always-legal inputs.
    struct Toy;
    impl LaneEval for Toy {
        fn state(&mut self, w: &mut [Word]) {
            w[1] = w[0]; // terminal = base
        }
        fn next(&mut self, w: &mut [Word]) {
            w[4] = !w[0]; // next = not base
        }
        fn goals(&mut self, _: &mut [Word]) {}
    }

    #[test]
    fn toy_playouts_end_after_one_step_with_goals() {
        let plan = LanePlan {
            words: 5,
            terminal: 1,
            ones: vec![2],
            base: vec![0],
            next: vec![4],
            input: vec![3, 3],
            legal: vec![2, 2],
            goals: vec![(0, 100, 0), (0, 50, 2)],
            goal_net: false,
        };
        let mut lanes = Lanes::new(&plan);
        let start = [0u64];
        let n = 200;
        let (mut goals, mut lengths) = (vec![0; n], vec![0; n]);
        lanes.run(&plan, &mut Toy, &[(0, 2)], |_| &start[..], n, 9, 10, &mut goals, &mut lengths).unwrap();
        assert!(lengths.iter().all(|&l| l == 1));
        assert!(goals.iter().all(|&g| g == 100));
        let err = lanes.run(&plan, &mut Toy, &[(0, 2)], |_| &start[..], n, 9, 0, &mut goals, &mut lengths);
        assert_eq!(err, Err(LaneError::TooLong(0)));
        let err = lanes.run(&plan, &mut Toy, &[(0, 0)], |_| &start[..], n, 9, 10, &mut goals, &mut lengths);
        assert_eq!(err, Err(LaneError::NoLegalMove));
    }

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
            for _ in 0..1 + rng.below(70) {
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

    /// Every lane draws each of its legal inputs about equally often:
    /// lanes with 1 to 70 legal inputs across two transposed blocks, and
    /// with 1 to 11 among few candidates (the 8 x 8 tiles).
    #[test]
    fn draws_are_uniform_per_lane() {
        for (n, spread) in [(100, 70), (12, 11)] {
            draws_are_uniform(n, spread);
        }
    }

    fn draws_are_uniform(n: usize, spread: usize) {
        let plan = LanePlan {
            words: 2 * n as u32,
            terminal: 0,
            ones: vec![],
            base: vec![],
            next: vec![],
            input: (0..n as u32).collect(),
            legal: (n as u32..2 * n as u32).collect(),
            goals: vec![],
            goal_net: false,
        };
        // Lane l may play inputs 0..=(l % spread) and the last input.
        let legal = |j: usize, l: usize| j <= l % spread || j == n - 1;
        let mut lanes = Lanes::new(&plan);
        for j in 0..n {
            let w = (0..LANES).filter(|&l| legal(j, l)).fold(0 as Word, |w, l| w | 1 << l);
            lanes.words[n + j] = w;
        }
        let rounds = 4000;
        let mut hits = vec![[0u32; LANES]; n];
        let mut rng = Rng::new(5);
        for _ in 0..rounds {
            for w in lanes.played.drain(..) {
                lanes.words[w as usize] = 0;
            }
            lanes.choose(&plan, 0..n, !0, 0, 0, 1, &mut rng).unwrap();
            for (j, h) in hits.iter_mut().enumerate() {
                for (l, x) in h.iter_mut().enumerate() {
                    *x += (lanes.words[j] >> l & 1) as u32;
                }
            }
        }
        for l in 0..LANES {
            let k = (0..n).filter(|&j| legal(j, l)).count() as f64;
            let (p, sd) = (rounds as f64 / k, (rounds as f64 * (1.0 / k) * (1.0 - 1.0 / k)).sqrt());
            for j in 0..n {
                let h = hits[j][l] as f64;
                if legal(j, l) {
                    assert!((h - p).abs() <= 5.0 * sd + 1.0, "lane {l} input {j}: {h} draws, expected {p:.0}");
                } else {
                    assert_eq!(h, 0.0, "lane {l} played illegal input {j}");
                }
            }
        }
    }

    /// The scan of a dense run of legal words (as generated code lays
    /// them out) chooses exactly what the word-by-word scan does.
    #[test]
    fn dense_and_scattered_legal_words_choose_alike() {
        let n = 37;
        // Inputs at words 0..n, legal words at n..2n (dense) or reversed.
        let dense = LanePlan {
            words: 2 * n as u32,
            terminal: 0,
            ones: vec![],
            base: vec![],
            next: vec![],
            input: (0..n as u32).collect(),
            legal: (n as u32..2 * n as u32).collect(),
            goals: vec![],
            goal_net: false,
        };
        let scattered = LanePlan { legal: (n as u32..2 * n as u32).rev().collect(), ..dense.clone() };
        let mut rng = Rng::new(3);
        for round in 0..50 {
            let word = |rng: &mut Rng| (rng.next_u64() as Word) << 64 | rng.next_u64() as Word;
            let legal: Vec<Word> = (0..n).map(|_| if rng.below(3) == 0 { 0 } else { word(&mut rng) }).collect();
            let live = word(&mut rng) | 1;
            let mut chosen = Vec::new();
            for plan in [&dense, &scattered] {
                let mut lanes = Lanes::new(plan);
                assert_eq!(lanes.dense_legal, std::ptr::eq(plan, &dense));
                for (j, &w) in legal.iter().enumerate() {
                    lanes.words[plan.legal[j] as usize] = w | 1;
                }
                let mut r = Rng::new(round);
                lanes.choose(plan, 0..n, live, 0, 0, 1, &mut r).unwrap();
                chosen.push((lanes.words[..n].to_vec(), r.next_u64()));
            }
            assert_eq!(chosen[0], chosen[1], "round {round}");
            // Every live lane plays exactly one input.
            let all = chosen[0].0.iter().fold(0, |a, w| a | w);
            assert_eq!(all, live);
            assert_eq!(chosen[0].0.iter().map(|w| w.count_ones()).sum::<u32>(), live.count_ones());
        }
    }
}
