//! Many random playouts at once on bit-parallel native code (see
//! [`propel_compiler::lower::lanes`] and the plan, [`propel_abi::lanes`]): 128 lanes, one bit per playout in
//! each word. The generated code evaluates the network for all lanes; this
//! driver picks each lane's moves, ends the lanes whose game is over
//! (reading their goals) and refills them with the next playout.
//!
//! Moves are drawn in a fixed order (per step: roles in order; within a
//! role, rounds of draws over the lanes still drawing, in ascending order:
//! see `lanes/choose.rs`), so a seed gives the same results on every machine
//! that evaluates the same plan.
//!
//! Beside the uniform draw, the lanes play a few rollout policies that
//! the analysis turns on (`lanes/policy.rs`): win-first, safe-first,
//! decisive, capture-first and cut-off lanes.

mod choose;
mod policy;
mod step;

use step::{advance_words, mark_round};

use crate::heuristic::Material;
use crate::rng::Rng;
use propel_abi::LanePlan;
use propel_compiler::propnet::{Evaluator, Leaves, Propnet};

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
    /// A terminal state where role `role`'s goal (its largest value) is
    /// above 100, which the prover reports as an error too.
    #[error("goal value {value} of role number {role} is not from 0 to 100")]
    BadGoal { role: u32, value: i32 },
}

/// What a lane gets when it is free (see [`LaneSource::next_start`]).
pub enum Refill<'a> {
    /// A playout from this state (one bit per base).
    Start(&'a [u64]),
    /// A playout from `parent` whose first joint move is `joint` (one
    /// input per role, in role order; it must be legal): the lane computes
    /// the child and tells [`LaneSource::expanded`] what it found there
    /// before playing on (a search expands its tree on the lanes); where
    /// `report` is off, only a terminal child is told (its value is
    /// known: a search keeps it at once).
    Expand { parent: &'a [u64], joint: &'a [u32], report: bool },
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
    /// Where the lanes record moves ([`Lanes::set_record_moves`]): every
    /// input lane `lane` played in the playout now ending, one bit per
    /// input (bit `i % 64` of word `i / 64`). Comes just before the lane's
    /// [`LaneSource::finished`].
    fn played(&mut self, _lane: usize, _inputs: &[u64]) {}
    /// Whether to stop starting playouts now, asked at every step (the
    /// lanes in play then finish without their look-ahead): a source that
    /// hears of a stop only when a lane is free would wait for the end of
    /// a playout, seconds with look-ahead lanes in a long game.
    fn stop_now(&mut self) -> bool {
        false
    }
}

/// Per-thread memory of the lane driver.
#[derive(Clone, Debug)]
pub struct Lanes {
    words: Vec<Word>,
    /// (next output, base) word pairs: `direct`, where the next output is
    /// no other base's word, so the base takes it in place; `aliased`,
    /// where it is another base's (a shift, a swap), so it is gathered
    /// into `next` before any base is written.
    direct: Vec<(u32, u32)>,
    aliased: Vec<(u32, u32)>,
    next: Vec<Word>,
    /// This role's inputs legal in some live lane.
    cands: choose::Candidates,
    /// The input words written this step (cleared before the next).
    played: Vec<u32>,
    scratch: choose::Scratch,
    /// The step each lane's playout started at, and ended at.
    started: [u32; LANES],
    ended_at: [u32; LANES],
    /// Lanes whose next move is given ([`Refill::Expand`]), and each such
    /// lane's joint move (`roles` inputs from `lane * roles`).
    forced: Word,
    joint: Vec<u32>,
    /// The lanes of `forced` whose child is reported.
    report: Word,
    /// Lanes that played a given move last step: their state is the child
    /// to report; and each one's legal inputs per role (`lane * roles + role`).
    fresh: Word,
    fresh_moves: Vec<Vec<u32>>,
    /// Every lane that played a given move last step: a terminal child is
    /// reported whether or not `report` asked for it.
    given: Word,
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
    /// Win-first inputs, ascending ([`Lanes::set_win_first`]), and the
    /// candidates among them in the lanes that have one.
    win: Vec<u32>,
    win_cands: choose::Candidates,
    /// Safe-first ([`Lanes::set_safe_first`]): on, and what it keeps.
    safe: bool,
    safe_state: Safe,
    /// Rollouts cut short and valued by material ([`Lanes::set_cutoff`]).
    cutoff: Option<Cutoff>,
    /// The inputs each lane has played ([`Lanes::set_record_moves`]).
    moves: Option<MoveLog>,
    /// Decisive lanes' look-ahead ([`Lanes::set_decisive`]).
    decisive: Option<Box<Decisive>>,
    /// Capture-first lanes ([`Lanes::set_capture_first`]), and the
    /// capture candidates.
    capture: Option<Capture>,
    cap_cands: choose::Candidates,
    /// Once the source says stop, the lanes still playing finish without
    /// the look-ahead and take-backs ([`Lanes::set_plain_after_stop`]).
    plain_after_stop: bool,
}

/// What decisive lanes keep for their one-ply look-ahead.
#[derive(Clone, Debug)]
struct Decisive {
    /// Per role, the goal word of its win (value 100), if it has one.
    win_goal: Vec<Option<u32>>,
    /// The lane memory with the other roles' single moves written, and
    /// the copy one candidate's children are evaluated in.
    base: Vec<Word>,
    probe: Vec<Word>,
    /// The aliased bases' next words ([`advance_words`]).
    next: Vec<Word>,
    /// At an input's legal word, the lanes where it wins at once (only
    /// at the words of `wins`; zero elsewhere).
    masks: Vec<Word>,
    /// This step's inputs that win in some lane, ascending.
    wins: Vec<u32>,
    /// Per role, the lanes where it has two legal inputs or more.
    choice: Vec<Word>,
    /// Each chooser's win goal word and lanes; each candidate input and
    /// the lanes that have yet to try it; the inputs of this round.
    owns: Vec<(u32, Word)>,
    left: Vec<(u32, Word)>,
    round: Vec<(u32, Word)>,
}

/// Inputs, ascending, each with the bases (other roles' pieces) it takes
/// where one stands.
pub type CaptureTable = Vec<(u32, Vec<u32>)>;

/// How capture-first lanes know a capture ([`Lanes::set_capture_first`]).
#[derive(Clone, Debug)]
pub enum Captures {
    /// Tried one ply ahead (turns the decisive look-ahead on): a move
    /// after which another role has fewer of these pieces.
    LookAhead(Material),
    /// Known beforehand: inputs with the bases (other roles' pieces) each
    /// takes where one stands, ascending by input.
    Table(CaptureTable),
}

/// What capture-first lanes keep: per role, the other roles' pieces,
/// and at each step the moves that take one.
#[derive(Clone, Debug)]
struct Capture {
    /// The chance that a lane with a capture legal (and no win) plays one.
    chance: f64,
    /// Per role, the lane words of the other roles' pieces (look-ahead).
    foes: Vec<Vec<u32>>,
    /// Inputs and the lane words of the pieces each takes (a table;
    /// empty: the look-ahead finds the captures).
    table: Vec<(u32, Vec<u32>)>,
    /// Per role, this step's lanes where it chooses.
    choosers: Vec<(usize, Word)>,
    /// At an input's legal word, the lanes where it takes a piece (only
    /// at the words of `caps`; zero elsewhere).
    masks: Vec<Word>,
    /// This step's inputs that take a piece in some lane, ascending.
    caps: Vec<u32>,
}

impl Decisive {
    fn new(plan: &LanePlan, aliased: usize) -> Decisive {
        let roles = plan.goals.iter().map(|g| g.0 as usize + 1).max().unwrap_or(0);
        let mut win_goal = vec![None; roles];
        for &(role, value, w) in &plan.goals {
            if value == u32::from(crate::machine::GOAL_MAX) {
                win_goal[role as usize] = Some(w);
            }
        }
        let n = plan.words as usize;
        Decisive {
            win_goal,
            base: vec![0; n],
            probe: vec![0; n],
            next: vec![0; aliased],
            masks: vec![0; n],
            wins: Vec::new(),
            choice: Vec::new(),
            owns: Vec::new(),
            left: Vec::new(),
            round: Vec::new(),
        }
    }
}

/// The inputs each lane has played in its current playout, for move
/// statistics such as RAVE's (all moves as first).
#[derive(Clone, Debug)]
struct MoveLog {
    /// Per lane word: the input written there, or `u32::MAX`.
    input_at: Vec<u32>,
    /// Per input: the lanes that have played it.
    seen: Vec<Word>,
    /// One lane's inputs, one bit each (handed to the source).
    out: Vec<u64>,
}

impl MoveLog {
    fn new(plan: &LanePlan) -> MoveLog {
        let mut input_at = vec![u32::MAX; plan.words as usize];
        for (i, &w) in plan.input.iter().enumerate() {
            if let Some(x) = input_at.get_mut(w as usize) {
                *x = i as u32;
            }
        }
        MoveLog { input_at, seen: vec![0; plan.input.len()], out: vec![0; plan.input.len().div_ceil(64)] }
    }

    /// Notes the inputs written this step (`played`: their words).
    fn note(&mut self, words: &[Word], played: &[u32]) {
        for &at in played {
            if let Some(&i) = self.input_at.get(at as usize) {
                if let Some(x) = self.seen.get_mut(i as usize) {
                    *x |= words[at as usize];
                }
            }
        }
    }

    /// Hands lane `l`'s inputs to `source` and forgets them.
    fn report(&mut self, l: usize, source: &mut impl LaneSource) {
        self.out.iter_mut().for_each(|w| *w = 0);
        let bit = LANE_BIT[l];
        for (i, x) in self.seen.iter_mut().enumerate() {
            if *x & bit != 0 {
                *x &= !bit;
                self.out[i / 64] |= 1 << (i % 64);
            }
        }
        source.played(l, &self.out);
    }
}

/// Material-cutoff rollouts: a lane that has played `steps` steps without
/// reaching a terminal state ends there, valued by its material against
/// a reference state's ([`Material::relative`]).
#[derive(Clone, Debug)]
struct Cutoff {
    steps: u32,
    /// Per role (two): each piece's lane word and value.
    pieces: [Vec<(u32, f64)>; 2],
    /// The reference state's material share ([`Material::share`]).
    then: f64,
}

/// What safe-first lanes keep from one step to the next.
#[derive(Clone, Debug, Default)]
struct Safe {
    /// Each base's word before the last step (plan order).
    prev: Vec<Word>,
    /// The inputs chosen at the last step and the lanes that chose each.
    chosen: Vec<(u32, Word)>,
    /// Inputs taken back, and the lanes that may not choose them again
    /// in the decision they are making.
    tried: Vec<(u32, Word)>,
    /// Lanes that took their move back at the last step (they sat out).
    waited: Word,
    /// Lanes that ran out of untried moves: they play on without taking
    /// their next move back.
    spent: Word,
    /// Moves each lane has taken back in the decision it is making.
    tries: Vec<u8>,
}

/// Moves a safe-first lane takes back in one decision before it plays
/// on: where the other side's win cannot be stopped, trying every move
/// cost knightThrough's lanes about 19 wasted steps per move played.
const SAFE_TRIES: u8 = 8;

impl Lanes {
    pub fn new(plan: &LanePlan) -> Lanes {
        let mut words: Vec<Word> = vec![0; plan.words as usize];
        for &w in &plan.ones {
            words[w as usize] = !0;
        }
        let bases: std::collections::HashSet<u32> = plan.base.iter().copied().collect();
        let pairs = plan.next.iter().copied().zip(plan.base.iter().copied());
        let (aliased, direct): (Vec<_>, Vec<_>) = pairs.partition(|(n, b)| n != b && bases.contains(n));
        Lanes {
            words,
            next: vec![0; aliased.len()],
            direct,
            aliased,
            cands: Default::default(),
            played: Vec::new(),
            scratch: Default::default(),
            started: [0; LANES],
            ended_at: [0; LANES],
            forced: 0,
            report: 0,
            joint: Vec::new(),
            fresh: 0,
            fresh_moves: Vec::new(),
            given: 0,
            child: Vec::new(),
            staged: 0,
            staged_bits: Vec::new(),
            goals: Vec::new(),
            dense_legal: plan.legal.windows(2).all(|p| p[1] == p[0] + 1),
            win: Vec::new(),
            win_cands: Default::default(),
            safe: false,
            safe_state: Safe::default(),
            cutoff: None,
            moves: None,
            decisive: None,
            capture: None,
            cap_cands: Default::default(),
            plain_after_stop: false,
        }
    }

    /// With `on`, once a streaming run's source has said [`Refill::Stop`],
    /// the lanes still playing finish their games without the decisive
    /// look-ahead, capture-first moves and safe-first take-backs (one
    /// evaluation per step instead of one per move): a search waits for
    /// those games after its deadline, and with the look-ahead 128 long
    /// games (speedChess) overran the play clock. The results stay whole
    /// playouts, the rest of their moves drawn as plain lanes draw them.
    pub fn set_plain_after_stop(&mut self, on: bool) {
        self.plain_after_stop = on;
    }

    /// Records the inputs each lane plays, handed to the source as each
    /// playout ends ([`LaneSource::played`]), for move statistics (RAVE).
    /// Costs a pass over the inputs played per step and over all inputs
    /// per playout.
    pub fn set_record_moves(&mut self, plan: &LanePlan, on: bool) {
        self.moves = on.then(|| MoveLog::new(plan));
    }

    /// Puts state `bits` (one bit per base) into lane `l`: at once with
    /// the lanes before it when they start from the same state (as all
    /// playouts from one position do), else after them
    /// ([`Lanes::load_staged`]).
    fn stage(&mut self, plan: &LanePlan, l: usize, bits: &[u64]) {
        if self.staged != 0 && !same(&self.staged_bits, bits) {
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
                for (x, &g) in self.goals[p * self.roles..(p + 1) * self.roles].iter_mut().zip(goals) {
                    *x = g;
                }
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
        (self.forced, self.fresh, self.report, self.given) = (0, 0, 0, 0);
        if let Some(log) = &mut self.moves {
            log.seen.iter_mut().for_each(|x| *x = 0);
        }
        let mut rng = Rng::new(seed);
        let mut active: Word = 0;
        let mut step = 0u32;
        // The earliest start among active lanes (a lower bound), for the
        // step limit.
        let mut oldest = 0u32;
        let mut stopped = false;
        // Lanes whose game ended, kept with their terminal state until
        // their goals are read: with a separate goal network (othello's
        // piece counting, five times the playout network) evaluating it
        // for every lane that ends, one or two a step, cost more than the
        // steps themselves. Parked lanes are not refilled; at least one
        // lane is active while any is parked.
        let mut parked: Word = 0;
        let safe = self.safe_first();
        if safe {
            let st = &mut self.safe_state;
            st.prev.resize(plan.base.len(), 0);
            st.tries.clear();
            st.tries.resize(LANES, 0);
            (st.waited, st.spent) = (0, 0);
            st.chosen.clear();
            st.tried.clear();
        }
        // Lanes loaded this step (no step of theirs to take back).
        let mut loaded: Word;
        loop {
            loaded = 0;
            // Every eighth step: a clock read costs a few percent of a
            // step of the smallest games.
            if step & 7 == 0 && !stopped {
                stopped = source.stop_now();
            }
            let mut free = !active & !parked;
            while free != 0 && !stopped {
                let l = free.trailing_zeros() as usize;
                free &= free - 1;
                match source.next_start(l) {
                    Refill::Start(bits) => {
                        self.stage(plan, l, bits);
                        self.started[l] = step;
                        active |= LANE_BIT[l];
                        loaded |= LANE_BIT[l];
                    }
                    Refill::Expand { parent, joint, report } => {
                        self.stage(plan, l, parent);
                        self.joint[l * roles..(l + 1) * roles].copy_from_slice(&joint[..roles]);
                        self.forced |= LANE_BIT[l];
                        if report {
                            self.report |= LANE_BIT[l];
                        }
                        self.started[l] = step;
                        active |= LANE_BIT[l];
                        loaded |= LANE_BIT[l];
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
            let given = std::mem::take(&mut self.given) & active;
            if ended != 0 {
                self.report_children(plan, given & ended, true, roles, source);
                each_lane(ended, |l| self.ended_at[l] = step);
                parked |= ended;
                active &= !ended;
                let wait = plan.goal_net && !stopped && active != 0 && parked.count_ones() < PARKED_LANES;
                if !wait {
                    self.finish(plan, eval, std::mem::take(&mut parked), source)?;
                }
                if active == 0 {
                    continue;
                }
            }
            if self.cutoff.is_some() {
                // Lanes whose child is still to be reported play on.
                active &= !self.cut(active & !fresh & !given, step, source);
                if active == 0 {
                    continue;
                }
            }
            if step.saturating_sub(oldest) >= max_steps {
                oldest = self.oldest(active);
                if step.saturating_sub(oldest) >= max_steps {
                    return Err(LaneError::TooLong(max_steps));
                }
            }
            // Decisive lanes look one ply ahead first: the wins found
            // are also the threats safe-first takes back.
            self.clear_inputs();
            let plain = stopped && self.plain_after_stop;
            // Called with no lanes it still clears the last step's finds.
            self.look_ahead(plan, eval, role_range, if plain { 0 } else { active & !self.forced });
            self.table_captures(plan, if plain { 0 } else { active & !self.forced });
            // Safe-first: lanes whose last move left another role a win
            // take it back and sit this step out.
            let back = if safe && !plain { self.take_back(plan, role_range, active & !given & !loaded) } else { 0 };
            // Neither the move taken back nor the step sat out counts.
            each_lane(back, |l| self.started[l] += 2);
            let (forced, fresh) = (self.forced & active, fresh & !ended);
            let moving = active & !forced & !back;
            if safe {
                self.exclude_tried(plan, role_range, moving);
                self.safe_state.chosen.clear();
            }
            for (r, &(lo, hi)) in role_range.iter().enumerate() {
                self.choose(plan, lo as usize..hi as usize, moving, fresh, r, roles, &mut rng)?;
            }
            self.play_forced(plan, forced, roles);
            if let Some(log) = &mut self.moves {
                log.note(&self.words, &self.played);
            }
            self.report_children(plan, fresh, false, roles, source);
            (self.forced, self.fresh, self.given) = (0, forced & std::mem::take(&mut self.report), forced);
            if safe {
                let Lanes { words, safe_state, .. } = self;
                for (p, &b) in safe_state.prev.iter_mut().zip(&plan.base) {
                    *p = words[b as usize];
                }
            }
            eval.next(&mut self.words);
            self.advance(parked | back);
            step += 1;
        }
    }
}

/// Lanes parked before a separate goal network is evaluated for them
/// (`Lanes::stream`).
const PARKED_LANES: u32 = 16;

/// Whether two states are equal: a loop, not `==`, which calls `memcmp`
/// (slow for the one or few words of a state, and called per lane refilled).
fn same(a: &[u64], b: &[u64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
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
            let inputs = vec![false; self.net.inputs.len()];
            self.order.eval(self.net, &Leaves { bases: &bases, inputs: &inputs, answers: &[] }, &mut self.val);
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
            self.order.eval(self.net, &Leaves { bases: &bases, inputs: &inputs, answers: &[] }, &mut self.val);
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
            let inputs = vec![false; g.inputs.len()];
            order.eval(g, &Leaves { bases: &bases, inputs: &inputs, answers: &[] }, &mut self.val);
            let val = &self.val;
            for (x, &(_, _, w)) in g.goals.iter().zip(&self.plan.goals) {
                put(words, w, l, val[x.comp as usize]);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::needless_range_loop, reason = "tests compare row r, column c, lane l of several tables by index")]
mod tests;
