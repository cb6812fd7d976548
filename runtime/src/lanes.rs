//! Many random playouts at once on bit-parallel native code (see
//! [`propel_compiler::lower::lanes`]): 128 lanes, one bit per playout in
//! each word. The generated code evaluates the network for all lanes; this
//! driver picks each lane's moves, ends the lanes whose game is over
//! (reading their goals) and refills them with the next playout.
//!
//! Moves are drawn in a fixed order (per step: roles in order, then lanes
//! in ascending order), so a seed gives the same results on every machine
//! that evaluates the same plan.

use crate::rng::Rng;
use propel_compiler::lower::lanes::LanePlan;
use propel_compiler::propnet::{Evaluator, Propnet};

pub use propel_compiler::lower::lanes::LANES;

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
    count: [u32; LANES],
    pick: [u32; LANES],
    playout: [u32; LANES],
    length: [u32; LANES],
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
            count: [0; LANES],
            pick: [0; LANES],
            playout: [0; LANES],
            length: [0; LANES],
            dense_legal: plan.legal.windows(2).all(|p| p[1] == p[0] + 1),
        }
    }

    /// Puts state `bits` (one bit per base) into lane `l`.
    fn load(&mut self, plan: &LanePlan, l: usize, bits: &[u64]) {
        let m: Word = 1 << l;
        for (i, &w) in plan.base.iter().enumerate() {
            let on = bits.get(i / 64).is_some_and(|b| b >> (i % 64) & 1 == 1);
            let x = &mut self.words[w as usize];
            *x = if on { *x | m } else { *x & !m };
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
        let mut rng = Rng::new(seed);
        let mut active: Word = 0;
        let mut next_playout = 0usize;
        loop {
            let mut free = !active;
            while free != 0 && next_playout < count {
                let l = free.trailing_zeros() as usize;
                free &= free - 1;
                self.load(plan, l, start(next_playout));
                self.playout[l] = next_playout as u32;
                self.length[l] = 0;
                active |= 1 << l;
                next_playout += 1;
            }
            if active == 0 {
                return Ok(());
            }
            eval.state(&mut self.words);
            let ended = self.words[plan.terminal as usize] & active;
            if ended != 0 {
                self.finish(plan, eval, ended, roles, goals, lengths);
                active &= !ended;
                if active == 0 {
                    continue;
                }
            }
            let mut a = active;
            while a != 0 {
                let l = a.trailing_zeros() as usize;
                a &= a - 1;
                if self.length[l] >= max_steps {
                    return Err(LaneError::TooLong(max_steps));
                }
            }
            for w in self.played.drain(..) {
                self.words[w as usize] = 0;
            }
            for &(lo, hi) in role_range {
                self.choose(plan, lo as usize..hi as usize, active, &mut rng)?;
            }
            eval.next(&mut self.words);
            for (x, &w) in self.next.iter_mut().zip(&plan.next) {
                *x = self.words[w as usize];
            }
            for (&x, &w) in self.next.iter().zip(&plan.base) {
                self.words[w as usize] = x;
            }
            let mut a = active;
            while a != 0 {
                let l = a.trailing_zeros() as usize;
                a &= a - 1;
                self.length[l] += 1;
            }
        }
    }

    /// Records the lanes in `ended` (terminal): lengths and goals.
    fn finish(
        &mut self,
        plan: &LanePlan,
        eval: &mut impl LaneEval,
        ended: Word,
        roles: usize,
        goals: &mut [i32],
        lengths: &mut [u32],
    ) {
        if plan.goal_net {
            eval.goals(&mut self.words);
        }
        let mut e = ended;
        while e != 0 {
            let l = e.trailing_zeros() as usize;
            e &= e - 1;
            let p = self.playout[l] as usize;
            lengths[p] = self.length[l];
            goals[p * roles..(p + 1) * roles].fill(-1);
        }
        for &(role, value, w) in &plan.goals {
            let mut e = self.words[w as usize] & ended;
            while e != 0 {
                let l = e.trailing_zeros() as usize;
                e &= e - 1;
                let g = &mut goals[self.playout[l] as usize * roles + role as usize];
                *g = (*g).max(value as i32);
            }
        }
    }

    /// One role's move in every lane of `live`: counts each lane's legal
    /// inputs, draws one uniformly (lanes in ascending order), and writes
    /// the input words of the inputs played.
    fn choose(
        &mut self,
        plan: &LanePlan,
        inputs: std::ops::Range<usize>,
        live: Word,
        rng: &mut Rng,
    ) -> Result<(), LaneError> {
        let Lanes { words, legal, count, pick, played, dense_legal, .. } = self;
        legal.clear();
        *count = [0; LANES];
        let mut take = |j: usize, w: Word| {
            legal.push((j as u32, w));
            let mut b = w;
            while b != 0 {
                count[b.trailing_zeros() as usize] += 1;
                b &= b - 1;
            }
        };
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
                        take(inputs.start + 8 * k + i, block[i] & live);
                    }
                }
            }
            None => {
                for j in inputs {
                    let w = words[plan.legal[j] as usize] & live;
                    if w != 0 {
                        take(j, w);
                    }
                }
            }
        }
        let mut a = live;
        while a != 0 {
            let l = a.trailing_zeros() as usize;
            a &= a - 1;
            if count[l] == 0 {
                return Err(LaneError::NoLegalMove);
            }
            pick[l] = rng.below(count[l] as usize) as u32;
        }
        // pick[l] counts down over the lane's legal inputs; the input met
        // when it is 0 is the one played, and the lane stops counting.
        let mut waiting = live;
        for &(j, w) in legal.iter() {
            let mut b = w & waiting;
            let mut chosen: Word = 0;
            while b != 0 {
                let l = b.trailing_zeros() as usize;
                b &= b - 1;
                chosen |= ((pick[l] == 0) as Word) << l;
                pick[l] = pick[l].wrapping_sub(1);
            }
            if chosen != 0 {
                let at = plan.input[j as usize];
                words[at as usize] = chosen;
                played.push(at);
                waiting &= !chosen;
                if waiting == 0 {
                    break;
                }
            }
        }
        Ok(())
    }
}

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
            let mut word = |rng: &mut Rng| (rng.next_u64() as Word) << 64 | rng.next_u64() as Word;
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
                lanes.choose(plan, 0..n, live, &mut r).unwrap();
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
