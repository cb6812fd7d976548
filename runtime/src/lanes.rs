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
//! Win-first lanes ([`Lanes::set_win_first`]): given a set of inputs
//! known to win at once for the role that plays them (the analysis's
//! `winning` moves), a lane where its role has one of them legal plays
//! one of those, drawn uniformly among them; every other lane draws
//! uniformly among all its legal inputs as before. With the set empty
//! nothing changes (not even the random draws).
//!
//! Safe-first lanes ([`Lanes::set_safe_first`], with a win-first set or
//! decisive lanes, whose look-ahead then finds the wins):
//! where a lane's move leaves another role a winning input legal, the lane
//! takes the move back and chooses again among the moves it has not
//! tried, until one leaves no such win, none is left or it has tried
//! `SAFE_TRIES` (the decisive and
//! anti-decisive moves of heavy playouts; Sancho's greedy rollouts do the
//! same by backtracking). A lane that takes a move back sits out one step,
//! so the other lanes never wait for it.
//!
//! Decisive lanes ([`Lanes::set_decisive`]): before each step, every move
//! of a role that has a choice (the others having one legal move each) is
//! played one ply ahead on a copy of the lane memory, and a lane where
//! some move ends the game with the role's win plays one of those, drawn
//! uniformly; the others draw as before. Win-first lanes need moves that
//! win wherever they are legal (breakthrough's last row); this finds the
//! wins of games where no move always wins (four in a row), at the cost
//! of one evaluation of the network per step for each move of the lane
//! with the most moves (each lane tries its first untried move in each
//! round; Teytaud and Teytaud's decisive moves).
//!
//! Capture-first lanes ([`Lanes::set_capture_first`]): a lane with no win
//! but a capture legal plays one, drawn uniformly, with a given chance;
//! the capture-biased playouts of Lorentz and Horey's breakthrough
//! program. The captures are found one of two ways ([`Captures`]): by the
//! decisive look-ahead, which then also notes the moves after which
//! another role has fewer of its pieces (the analysis's material), or
//! from a table of the moves seen to take a piece and where (the
//! analysis's `captures`): a move whose target square holds another
//! role's piece now takes it, one AND per move and no look-ahead.

mod choose;

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

    /// Decisive move choice (see the module comment): each step, the
    /// moves of the role with a choice are tried one ply ahead, and a lane
    /// where one of them wins at once plays one of those. Takes the place
    /// of the win-first inputs while on.
    pub fn set_decisive(&mut self, plan: &LanePlan, on: bool) {
        self.decisive = on.then(|| Box::new(Decisive::new(plan, self.aliased.len())));
        if !on && self.capture.as_ref().is_some_and(|c| c.table.is_empty()) {
            self.capture = None;
        }
    }

    /// Whether decisive move choice is on.
    pub fn decisive(&self) -> bool {
        self.decisive.is_some()
    }

    /// Capture-first move choice (see the module comment): with
    /// `Some((chance, captures))`, a lane whose role to move has no win
    /// but a capture legal plays one with probability `chance` (0..1),
    /// drawn uniformly. [`Captures::LookAhead`] rides on the decisive
    /// look-ahead, which it turns on (a later `set_decisive(false)` turns
    /// both off); [`Captures::Table`] needs none. `None`: off.
    pub fn set_capture_first(&mut self, plan: &LanePlan, capture: Option<(f64, &Captures)>) {
        let Some((chance, captures)) = capture else {
            self.capture = None;
            return;
        };
        let word = |b: &u32| plan.base.get(*b as usize).copied();
        let (foes, table) = match captures {
            Captures::LookAhead(material) => {
                let foes = material.foes().iter().map(|bs| bs.iter().filter_map(word).collect()).collect();
                if self.decisive.is_none() {
                    self.set_decisive(plan, true);
                }
                (foes, Vec::new())
            }
            Captures::Table(t) => {
                let inputs = plan.legal.len() as u32;
                let table = t
                    .iter()
                    .filter(|(i, _)| *i < inputs)
                    .map(|(i, bases)| (*i, bases.iter().filter_map(word).collect::<Vec<u32>>()))
                    .filter(|(_, w)| !w.is_empty())
                    .collect::<CaptureTable>();
                if table.is_empty() {
                    // Nothing to read: off, rather than a look-ahead never asked for.
                    self.capture = None;
                    return;
                }
                (Vec::new(), table)
            }
        };
        self.capture = Some(Capture {
            chance: chance.clamp(0.0, 1.0),
            foes,
            table,
            choosers: Vec::new(),
            masks: vec![0; plan.words as usize],
            caps: Vec::new(),
        });
    }

    /// The chance of capture-first move choice (`None`: off).
    pub fn capture_first(&self) -> Option<f64> {
        self.capture.as_ref().map(|c| c.chance)
    }

    /// Whether capture-first lanes read their captures from a table
    /// ([`Captures::Table`]) rather than the look-ahead.
    pub fn capture_table(&self) -> bool {
        self.capture.as_ref().is_some_and(|c| !c.table.is_empty())
    }

    /// Records the inputs each lane plays, handed to the source as each
    /// playout ends ([`LaneSource::played`]), for move statistics (RAVE).
    /// Costs a pass over the inputs played per step and over all inputs
    /// per playout.
    pub fn set_record_moves(&mut self, plan: &LanePlan, on: bool) {
        self.moves = on.then(|| MoveLog::new(plan));
    }

    /// Material-cutoff rollouts: a lane whose playout has run `steps`
    /// steps (at least 2) without ending stops there, and counts as a win
    /// (100 to 0) for the role whose share of the material grew against
    /// the reference state's ([`Material::relative`]), a draw (50 each)
    /// where it did not move (material is found only in two-player games
    /// whose goals sum to 100). The reference is the state given last to
    /// [`Lanes::set_cutoff_reference`] (until then, an even share). `None`,
    /// or a game with other than two roles: playouts run to the end.
    pub fn set_cutoff(&mut self, plan: &LanePlan, cutoff: Option<(u32, &Material)>) {
        self.cutoff = cutoff.filter(|(_, m)| m.pieces.len() == 2).map(|(steps, m)| {
            let words = |role: usize| {
                m.pieces[role]
                    .iter()
                    .filter_map(|&(b, v)| plan.base.get(b as usize).map(|&w| (w, v)))
                    .collect::<Vec<_>>()
            };
            Cutoff { steps: steps.max(2), pieces: [words(0), words(1)], then: 0.0 }
        });
    }

    /// The state (one bit per base) that cut rollouts are valued against
    /// ([`Lanes::set_cutoff`]): the search's root.
    pub fn set_cutoff_reference(&mut self, material: &Material, bits: &[u64]) {
        if let Some(c) = &mut self.cutoff {
            c.then = material.share(bits);
        }
    }

    /// The steps after which rollouts are cut (`None`: never).
    pub fn cutoff(&self) -> Option<u32> {
        self.cutoff.as_ref().map(|c| c.steps)
    }

    /// Safe-first move choice (with a win-first set; see the module
    /// comment): a move after which another role has a winning input
    /// legal is taken back and another chosen.
    pub fn set_safe_first(&mut self, on: bool) {
        self.safe = on;
    }

    /// Whether safe-first move choice is on and has winning moves to
    /// look for (win-first inputs, or decisive lanes' look-ahead).
    pub fn safe_first(&self) -> bool {
        self.safe && (!self.win.is_empty() || self.decisive.is_some())
    }

    /// Win-first move choice: wherever a role has one of `winning` legal
    /// (inputs that, in the sample that found them, won the game at once
    /// for the role that played them), the lane plays one of them, drawn
    /// uniformly among those legal there. Empty: uniform moves. Inputs
    /// the plan does not have are ignored.
    pub fn set_win_first(&mut self, plan: &LanePlan, winning: &[u32]) {
        self.win.clear();
        self.win.extend(winning.iter().copied().filter(|&i| (i as usize) < plan.legal.len()));
        self.win.sort_unstable();
        self.win.dedup();
    }

    /// The win-first inputs ([`Lanes::set_win_first`]).
    pub fn win_first(&self) -> &[u32] {
        &self.win
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

    /// Every base takes its next-state word, except in the `parked` lanes
    /// (which keep their terminal state until their goals are read).
    fn advance(&mut self, parked: Word) {
        let Lanes { words, next, direct, aliased, .. } = self;
        advance_words(words, next, direct, aliased, parked);
    }

    /// Decisive lanes: finds, for the lanes of `moving` where exactly one
    /// role has a choice, the inputs that end the game at once with that
    /// role's win (`Decisive::wins`, `Decisive::masks`), by evaluating
    /// the children in a copy of the lane memory, one round per move of
    /// the lane with the most. Called with this step's inputs cleared and
    /// the state's gates evaluated.
    fn look_ahead(&mut self, plan: &LanePlan, eval: &mut impl LaneEval, role_range: &[(u32, u32)], moving: Word) {
        let Lanes { words, direct, aliased, decisive, capture, .. } = self;
        let Some(d) = decisive.as_deref_mut() else { return };
        for &i in &d.wins {
            d.masks[plan.legal[i as usize] as usize] = 0;
        }
        d.wins.clear();
        d.choice.clear();
        let mut capture = capture.as_mut().filter(|c| c.table.is_empty());
        if let Some(c) = &mut capture {
            for &i in &c.caps {
                c.masks[plan.legal[i as usize] as usize] = 0;
            }
            c.caps.clear();
            c.choosers.clear();
        }
        let (mut once, mut twice) = (0 as Word, 0 as Word);
        for &(lo, hi) in role_range {
            let (mut any, mut many) = (0 as Word, 0 as Word);
            for &at in &plan.legal[lo as usize..hi as usize] {
                let w = words[at as usize] & moving;
                many |= any & w;
                any |= w;
            }
            d.choice.push(many);
            twice |= once & many;
            once |= many;
        }
        // Simultaneous choices are left to the uniform draw.
        let single = once & !twice;
        if single == 0 {
            return;
        }
        d.base.copy_from_slice(words);
        for (r, &(lo, hi)) in role_range.iter().enumerate() {
            // A role without a choice plays its one legal input.
            let passive = single & !d.choice[r];
            for i in lo as usize..hi as usize {
                d.base[plan.input[i] as usize] = words[plan.legal[i] as usize] & passive;
            }
        }
        // Each lane's untried moves; each round plays every lane's first
        // untried one at once, so the rounds are as many as the most
        // moves a lane has, not the moves legal in some lane.
        d.left.clear();
        d.owns.clear();
        for (r, &(lo, hi)) in role_range.iter().enumerate() {
            let own = single & d.choice[r];
            if own == 0 {
                continue;
            }
            let goal = d.win_goal.get(r).copied().flatten();
            if let Some(goal) = goal {
                d.owns.push((goal, own));
            }
            match &mut capture {
                Some(c) if c.foes.get(r).is_some_and(|f| !f.is_empty()) => c.choosers.push((r, own)),
                _ if goal.is_none() => continue,
                _ => {}
            }
            for i in lo as usize..hi as usize {
                let lanes = words[plan.legal[i] as usize] & own;
                if lanes != 0 {
                    d.left.push((i as u32, lanes));
                }
            }
        }
        loop {
            d.probe.copy_from_slice(&d.base);
            d.round.clear();
            let mut unpicked = !0 as Word;
            for (i, left) in d.left.iter_mut() {
                let p = *left & unpicked;
                if p != 0 {
                    unpicked &= !p;
                    *left &= !p;
                    d.probe[plan.input[*i as usize] as usize] |= p;
                    d.round.push((*i, p));
                }
            }
            if d.round.is_empty() {
                break;
            }
            d.left.retain(|&(_, l)| l != 0);
            eval.next(&mut d.probe);
            advance_words(&mut d.probe, &mut d.next, direct, aliased, 0);
            if let Some(c) = &mut capture {
                // A piece of another role there before the move and
                // gone after it.
                let mut took = 0 as Word;
                for &(r, own) in &c.choosers {
                    let gone =
                        c.foes[r].iter().fold(0 as Word, |x, &w| x | (d.base[w as usize] & !d.probe[w as usize]));
                    took |= gone & own;
                }
                mark_round(&d.round, &plan.legal, took & !unpicked, &mut c.masks, &mut c.caps);
            }
            eval.state(&mut d.probe);
            let ended = d.probe[plan.terminal as usize] & !unpicked;
            if ended == 0 {
                continue;
            }
            if plan.goal_net {
                eval.goals(&mut d.probe);
            }
            let win = d.owns.iter().fold(0 as Word, |x, &(goal, own)| x | (d.probe[goal as usize] & own)) & ended;
            mark_round(&d.round, &plan.legal, win, &mut d.masks, &mut d.wins);
        }
        d.wins.sort_unstable();
        if let Some(c) = &mut capture {
            c.caps.sort_unstable();
        }
    }

    /// Capture-first lanes with a table ([`Captures::Table`]): the inputs
    /// legal in some lane of `moving` where a piece they take stands
    /// (`Capture::caps`, and their lanes in `Capture::masks`). Called
    /// with the state's gates evaluated.
    fn table_captures(&mut self, plan: &LanePlan, moving: Word) {
        let Lanes { words, capture, .. } = self;
        let Some(c) = capture.as_mut().filter(|c| !c.table.is_empty()) else { return };
        for &i in &c.caps {
            c.masks[plan.legal[i as usize] as usize] = 0;
        }
        c.caps.clear();
        if moving == 0 {
            return;
        }
        for (i, takes) in &c.table {
            let at = plan.legal[*i as usize] as usize;
            let lanes = words[at] & moving;
            if lanes == 0 {
                continue;
            }
            let took = takes.iter().fold(0 as Word, |x, &w| x | words[w as usize]) & lanes;
            if took != 0 {
                c.masks[at] = took;
                c.caps.push(*i);
            }
        }
    }

    /// Safe-first: the lanes of `candidates` (they chose their last move
    /// freely) where that move left another role a winning input legal
    /// take it back: their bases return to the state before it, and the
    /// move joins the ones they may not choose again. Returns those lanes.
    fn take_back(&mut self, plan: &LanePlan, role_range: &[(u32, u32)], candidates: Word) -> Word {
        let Lanes { words, win, safe_state: st, decisive, .. } = self;
        let moved = candidates & !st.waited;
        let mut back = 0 as Word;
        // The winning inputs and, at their legal words, where they win:
        // the look-ahead's, or the win-first set's wherever legal.
        let (win, at) = match decisive.as_deref() {
            Some(d) => (&d.wins[..], &d.masks[..]),
            None => (&win[..], &words[..]),
        };
        for &(lo, hi) in role_range {
            let a = win.partition_point(|&i| i < lo);
            let b = win.partition_point(|&i| i < hi);
            let mut threat =
                win[a..b].iter().fold(0, |x, &i| x | at[plan.legal[i as usize] as usize]) & moved & !st.spent;
            each_lane(threat, |l| {
                if st.tries[l] >= SAFE_TRIES {
                    threat &= !LANE_BIT[l];
                }
            });
            if threat == 0 {
                continue;
            }
            back |= threat;
            // The other roles' moves are the ones taken back.
            for &(input, lanes) in &st.chosen {
                if (input < lo || input >= hi) && lanes & threat != 0 {
                    st.tried.push((input, lanes & threat));
                }
            }
        }
        st.spent &= !moved;
        // A decision is over for the lanes that moved and keep their move.
        let deciding = back | st.waited;
        each_lane(moved & !back, |l| st.tries[l] = 0);
        each_lane(back, |l| st.tries[l] += 1);
        st.tried.retain_mut(|(_, lanes)| {
            *lanes &= deciding;
            *lanes != 0
        });
        st.waited = back;
        if back != 0 {
            for (&b, &p) in plan.base.iter().zip(&st.prev) {
                let w = &mut words[b as usize];
                *w = (*w & !back) | (p & back);
            }
        }
        back
    }

    /// Safe-first: hides from the lanes of `moving` the moves they took
    /// back in the decision they are making (by clearing their legal
    /// bits, which the next step computes afresh), except in lanes where
    /// that would leave a role no move: those choose among all their
    /// moves and take nothing back in this decision.
    fn exclude_tried(&mut self, plan: &LanePlan, role_range: &[(u32, u32)], moving: Word) {
        let Lanes { words, safe_state: st, .. } = self;
        if st.tried.is_empty() {
            return;
        }
        for &(lo, hi) in role_range {
            let mut lanes = 0 as Word;
            for &(input, m) in st.tried.iter().filter(|(i, _)| (lo..hi).contains(i)) {
                words[plan.legal[input as usize] as usize] &= !(m & moving);
                lanes |= m & moving;
            }
            if lanes == 0 {
                continue;
            }
            let any = (lo..hi).fold(0, |x, i| x | words[plan.legal[i as usize] as usize]);
            let empty = lanes & !any;
            if empty != 0 {
                // Every move tried: the lane's moves were all legal here,
                // so their bits come back as they were.
                for &(input, m) in st.tried.iter().filter(|(i, _)| (lo..hi).contains(i)) {
                    words[plan.legal[input as usize] as usize] |= m & empty;
                }
                st.spent |= empty;
                for (_, m) in st.tried.iter_mut() {
                    *m &= !empty;
                }
            }
        }
    }

    /// Clears the input words written last step.
    fn clear_inputs(&mut self) {
        for w in self.played.drain(..) {
            self.words[w as usize] = 0;
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
                self.words[at as usize] |= LANE_BIT[l];
                self.played.push(at);
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

    /// Material cutoff: ends the lanes of `live` that have played the
    /// cutoff's steps, each valued by its material; returns them.
    fn cut(&mut self, live: Word, step: u32, source: &mut impl LaneSource) -> Word {
        let Lanes { cutoff, started, words, moves, .. } = self;
        let Some(c) = cutoff.as_ref() else { return 0 };
        let mut cut: Word = 0;
        each_lane(live, |l| {
            // A lane that took moves back has its start moved past them.
            if step.saturating_sub(started[l]) >= c.steps {
                cut |= LANE_BIT[l];
            }
        });
        each_lane(cut, |l| {
            let material = |role: usize| -> f64 {
                c.pieces[role].iter().filter(|&&(w, _)| words[w as usize] >> l & 1 == 1).map(|&(_, v)| v).sum()
            };
            // A win for the role whose share of the material grew since
            // the reference, a draw where it did not move: a soft value
            // (a pawn up in 32 is 0.56) would sit inside the spread that
            // exploration tuned for wins and losses ignores.
            let h = Material::value(material(0), material(1), c.then);
            let g = if h > 0.5 + 1e-9 {
                100
            } else if h < 0.5 - 1e-9 {
                0
            } else {
                50
            };
            if let Some(log) = moves.as_mut() {
                log.report(l, source);
            }
            source.finished(l, &[g, 100 - g], step.saturating_sub(started[l]));
        });
        cut
    }

    /// The earliest step at which a lane of `active` started.
    fn oldest(&self, active: Word) -> u32 {
        (0..LANES).filter(|&l| active >> l & 1 == 1).map(|l| self.started[l]).min().unwrap_or(0)
    }

    /// Reports the lanes in `ended` (each terminal, in its current state,
    /// since step `ended_at`) to `source`.
    fn finish(
        &mut self,
        plan: &LanePlan,
        eval: &mut impl LaneEval,
        ended: Word,
        source: &mut impl LaneSource,
    ) -> Result<(), LaneError> {
        // Parked lanes must still hold their terminal state.
        debug_assert_eq!(self.words[plan.terminal as usize] & ended, ended, "a lane left its terminal state");
        if plan.goal_net {
            eval.goals(&mut self.words);
        }
        let mut e = ended;
        while e != 0 {
            let l = e.trailing_zeros() as usize;
            e &= e - 1;
            for g in &mut self.goals {
                *g = -1;
            }
            for &(role, value, w) in &plan.goals {
                if self.words[w as usize] >> l & 1 == 1 {
                    let g = &mut self.goals[role as usize];
                    *g = (*g).max(value as i32);
                }
            }
            if let Some((role, &value)) =
                self.goals.iter().enumerate().find(|&(_, &g)| g > i32::from(crate::machine::GOAL_MAX))
            {
                return Err(LaneError::BadGoal { role: role as u32, value });
            }
            if let Some(log) = &mut self.moves {
                log.report(l, source);
            }
            source.finished(l, &self.goals, self.ended_at[l] - self.started[l]);
        }
        Ok(())
    }

    /// One role's move in every lane of `live`, drawn uniformly among the
    /// lane's legal inputs ([`choose::choose`]), written into the input
    /// words; in the lanes where a win-first input of the role is legal,
    /// uniformly among those instead. The role's legal words (the
    /// candidates) are gathered first, copied in one run from the dense
    /// run that generated code writes.
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
        let Lanes {
            words,
            cands,
            played,
            dense_legal,
            fresh_moves,
            scratch,
            win,
            win_cands,
            safe,
            safe_state,
            decisive,
            capture,
            cap_cands,
            ..
        } = self;
        if live == 0 {
            return Ok(());
        }
        // Capture-first: the lanes without a win but with a capture
        // legal (not one safe-first took back: the masks were found
        // before), each kept with the chance set.
        let (mut capturing, mut caps, mut chance) = (0 as Word, 0..0, 1.0);
        if let Some(c) = capture.as_mut() {
            caps = c.caps.partition_point(|&i| (i as usize) < inputs.start)
                ..c.caps.partition_point(|&i| (i as usize) < inputs.end);
            for &i in &c.caps[caps.clone()] {
                let at = plan.legal[i as usize] as usize;
                c.masks[at] &= words[at];
                capturing |= c.masks[at];
            }
            capturing &= live;
            chance = c.chance;
        }
        // Win-first: the lanes with a winning input legal (an OR of its
        // legal words; nothing at all when the set is empty). They draw
        // among those; the others (`rest`) among all their legal inputs.
        // Decisive lanes: the inputs the look-ahead found winning, each
        // with its own lanes (`masks`, at the legal words).
        let (mut wins, mut winning) = (&[][..], 0 as Word);
        let mut masks: &[Word] = words;
        if let Some(d) = decisive.as_deref() {
            let lo = d.wins.partition_point(|&i| (i as usize) < inputs.start);
            let hi = d.wins.partition_point(|&i| (i as usize) < inputs.end);
            wins = &d.wins[lo..hi];
            winning = wins.iter().fold(0, |a, &i| a | d.masks[plan.legal[i as usize] as usize]) & live;
            masks = &d.masks;
        } else if !win.is_empty() {
            let lo = win.partition_point(|&i| (i as usize) < inputs.start);
            let hi = win.partition_point(|&i| (i as usize) < inputs.end);
            wins = &win[lo..hi];
            winning = wins.iter().fold(0, |a, &i| a | words[plan.legal[i as usize] as usize]) & live;
        }
        capturing &= !winning;
        if capturing != 0 && chance < 1.0 {
            // 2^-24 steps are fine enough for a chance; one draw per lane.
            let keep = (chance * (1u64 << 24) as f64) as usize;
            each_lane(capturing, |l| {
                if rng.below(1 << 24) >= keep {
                    capturing &= !LANE_BIT[l];
                }
            });
        }
        let rest = live & !winning & !capturing;
        let first = inputs.start as u32;
        let run = plan.legal.get(inputs.start).filter(|_| *dense_legal);
        match run.and_then(|&at| words.get(at as usize..at as usize + inputs.len())) {
            Some(run) => cands.fill(first, run, rest),
            None => cands.gather(first, words, &plan.legal[inputs.clone()], rest),
        }
        if cands.any != rest {
            return Err(LaneError::NoLegalMove);
        }
        each_lane(fresh, |l| {
            let moves = &mut fresh_moves[l * roles + role];
            moves.clear();
            if (winning | capturing) >> l & 1 == 0 {
                moves.extend(cands.of_lane(l));
            } else {
                // Not among the candidates (a lane that expanded a
                // node: rare): read from the legal words.
                let legal = |&i: &usize| words[plan.legal[i] as usize] >> l & 1 == 1;
                moves.extend(inputs.clone().filter(legal).map(|i| i as u32));
            }
        });
        if winning != 0 {
            win_cands.pick_out(wins, masks, &plan.legal, winning);
        }
        if let Some(c) = capture.as_ref().filter(|_| capturing != 0) {
            cap_cands.pick_out(&c.caps[caps], &c.masks, &plan.legal, capturing);
        }
        let log = if *safe { Some(&mut safe_state.chosen) } else { None };
        let mut out = choose::Moves { words, played, at: &plan.input, log };
        if winning != 0 {
            choose::choose(win_cands, winning, rng, &mut out, scratch);
        }
        if capturing != 0 {
            choose::choose(cap_cands, capturing, rng, &mut out, scratch);
        }
        if rest != 0 {
            choose::choose(cands, rest, rng, &mut out, scratch);
        }
        Ok(())
    }
}

/// The look-ahead's finds of one round (`round`: each input tried and its
/// lanes; `found`: the lanes where it did what is looked for): each input
/// found in some lane joins `inputs` once, and its lanes join `masks` at
/// its legal word.
fn mark_round(round: &[(u32, Word)], legal: &[u32], found: Word, masks: &mut [Word], inputs: &mut Vec<u32>) {
    if found == 0 {
        return;
    }
    for &(i, p) in round {
        let at = legal[i as usize] as usize;
        if p & found != 0 {
            if masks[at] == 0 {
                inputs.push(i);
            }
            masks[at] |= p & found;
        }
    }
}

/// Lanes parked before a separate goal network is evaluated for them
/// (`Lanes::stream`).
const PARKED_LANES: u32 = 16;

/// Every base of `words` takes its next-state word (`direct` in place;
/// `aliased` through `next`, since another base's word is read), except
/// in the `parked` lanes.
fn advance_words(words: &mut [Word], next: &mut [Word], direct: &[(u32, u32)], aliased: &[(u32, u32)], parked: Word) {
    for (x, &(n, _)) in next.iter_mut().zip(aliased.iter()) {
        *x = words[n as usize];
    }
    if parked == 0 {
        for &(n, b) in direct.iter() {
            words[b as usize] = words[n as usize];
        }
        for (&x, &(_, b)) in next.iter().zip(aliased.iter()) {
            words[b as usize] = x;
        }
        return;
    }
    let blend = |old: &mut Word, x: Word| *old = (x & !parked) | (*old & parked);
    for &(n, b) in direct.iter() {
        let x = words[n as usize];
        blend(&mut words[b as usize], x);
    }
    for (&x, &(_, b)) in next.iter().zip(aliased.iter()) {
        blend(&mut words[b as usize], x);
    }
}

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

    /// A step moves every base to its next word at once, where next
    /// outputs are other bases' words (a rotation of three bases) as well
    /// as where they are not (base 3 from word 5), and parked lanes keep
    /// their state.
    #[test]
    fn bases_advance_together_through_aliased_next_words() {
        let plan = LanePlan {
            words: 6,
            terminal: 4,
            ones: vec![],
            base: vec![0, 1, 2, 3],
            next: vec![1, 2, 0, 5],
            input: vec![],
            legal: vec![],
            goals: vec![],
            goal_net: false,
        };
        let mut lanes = Lanes::new(&plan);
        assert_eq!((lanes.aliased.len(), lanes.direct.len()), (3, 1));
        let before: [Word; 6] = [0xa, 0xb, 0xc, 0xd, 0, 0xe];
        lanes.words.copy_from_slice(&before);
        lanes.advance(0);
        assert_eq!(lanes.words[..4], [0xb, 0xc, 0xa, 0xe]);
        // Lane 0 parked: its bits stay as they were.
        lanes.words.copy_from_slice(&before);
        lanes.advance(1);
        assert_eq!(lanes.words[..4], [0xa, 0xd, 0xa, 0xf]);
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
        // Lane l may play inputs 0..=(l % spread) and the last input.
        let legal = |j: usize, l: usize| j <= l % spread || j == n - 1;
        let (plan, mut lanes) = one_role(n, legal);
        let rounds = 4000;
        let mut hits = vec![[0u32; LANES]; n];
        let mut rng = Rng::new(5);
        for _ in 0..rounds {
            lanes.clear_inputs();
            lanes.choose(&plan, 0..n, !0, 0, 0, 1, &mut rng).unwrap();
            for (j, h) in hits.iter_mut().enumerate() {
                for (l, x) in h.iter_mut().enumerate() {
                    *x += (lanes.words[j] >> l & 1) as u32;
                }
            }
        }
        choose::tests::assert_uniform("lanes", &hits, rounds, legal);
    }

    /// A plan of `n` inputs of one role (input words `0..n`, legal words
    /// `n..2n`) whose lane `l` may play `legal(j, l)`.
    fn one_role(n: usize, legal: impl Fn(usize, usize) -> bool) -> (LanePlan, Lanes) {
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
        let mut lanes = Lanes::new(&plan);
        for j in 0..n {
            lanes.words[n + j] = (0..LANES).filter(|&l| legal(j, l)).fold(0 as Word, |w, l| w | 1 << l);
        }
        (plan, lanes)
    }

    /// Win-first: a lane with one winning input legal always plays it, a
    /// lane with two plays each half the time, and the other lanes draw
    /// uniformly among all their legal inputs; with few candidates
    /// (bit-sliced draws) and many (lane by lane).
    #[test]
    fn win_first_lanes_take_the_win_and_others_stay_uniform() {
        for (n, spread) in [(12, 11), (100, 70)] {
            // Lane l may play inputs 0..=(l % spread) and the last input;
            // inputs 5 and 7 win.
            let base = move |j: usize, l: usize| j <= l % spread || j == n - 1;
            let (plan, mut lanes) = one_role(n, base);
            lanes.set_win_first(&plan, &[7, 5, 5, n as u32 + 3]);
            assert_eq!(lanes.win_first(), &[5, 7], "sorted, deduplicated, unknown inputs dropped");
            let expected = move |j: usize, l: usize| match l % spread {
                k if k >= 7 => j == 5 || j == 7,
                k if k >= 5 => j == 5,
                _ => base(j, l),
            };
            let rounds = 3000;
            let mut hits = vec![[0u32; LANES]; n];
            let mut rng = Rng::new(8);
            for _ in 0..rounds {
                lanes.clear_inputs();
                lanes.choose(&plan, 0..n, !0, 0, 0, 1, &mut rng).unwrap();
                let moves: u32 = lanes.words[..n].iter().map(|w| w.count_ones()).sum();
                assert_eq!(moves, LANES as u32, "one move per lane");
                for (j, h) in hits.iter_mut().enumerate() {
                    each_lane(lanes.words[j], |l| h[l] += 1);
                }
            }
            choose::tests::assert_uniform("win-first", &hits, rounds, expected);
        }
    }

    /// With no winning input legal in any lane (or none given), win-first
    /// lanes choose exactly what plain lanes do, draw for draw.
    #[test]
    fn win_first_without_a_legal_win_changes_nothing() {
        let n = 40;
        let legal = |j: usize, l: usize| j != 3 && !(j * 7 + l).is_multiple_of(5);
        let (plan, plain) = one_role(n, legal);
        let mut win_first = plain.clone();
        win_first.set_win_first(&plan, &[3]);
        let mut out = Vec::new();
        for mut lanes in [plain, win_first] {
            let mut rng = Rng::new(21);
            let mut chosen = Vec::new();
            for _ in 0..20 {
                lanes.clear_inputs();
                lanes.choose(&plan, 0..n, !0 >> 3, 0, 0, 1, &mut rng).unwrap();
                chosen.extend_from_slice(&lanes.words[..n]);
            }
            out.push((chosen, rng.next_u64()));
        }
        assert_eq!(out[0], out[1]);
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
