//! Property tests on random small games: GDL generated from a random
//! description runs through the whole pipeline (reader, validation,
//! grounding, propnet, passes, code generation), and on random walks
//! through each game
//! - the propnet after no pass, after each pass alone and after the
//!   default pipeline,
//! - the JIT (the default pipeline, split when the build chooses to),
//! - and its bit-parallel lanes (children, legal moves and terminal goals
//!   reported by lane expansions)
//!
//! give the same outputs as the prover in every state: terminal, goals,
//! legal moves and the next state of a random joint move.
//!
//! The default run is short; `random_games_many` (ignored) runs many more
//! cases: `scripts/proptest.sh`.

use propel_compiler::propnet::passes::Pass;
use propel_runtime::lanes::{LaneSource, Refill};
use propel_runtime::{NativeMachine, Prover, Rng, StateMachine};
use propel_tests::propnet_machine;
use proptest::prelude::*;
use std::fmt::Write;
use std::sync::Arc;

/// A literal in a rule body; its numbers are taken modulo the game's
/// sizes when the game is written.
#[derive(Clone, Debug)]
struct Lit {
    kind: u8,
    a: u8,
    b: u8,
    neg: bool,
}

/// A rule: `head` picks next, legal, view, goal or terminal.
#[derive(Clone, Debug)]
struct RuleSpec {
    head: u8,
    a: u8,
    b: u8,
    body: Vec<Lit>,
}

#[derive(Clone, Debug)]
struct Spec {
    roles: u8,
    bases: u8,
    moves: u8,
    views: u8,
    /// Steps before the game ends (a counter makes every game finite).
    length: u8,
    init: u8,
    /// Bases kept by a rule with a variable, `(keep ?i)`.
    keep: u8,
    /// A legal rule with variables over a static relation.
    var_legal: bool,
    rules: Vec<RuleSpec>,
}

fn spec() -> impl Strategy<Value = Spec> {
    let lit =
        (any::<u8>(), any::<u8>(), any::<u8>(), any::<bool>()).prop_map(|(kind, a, b, neg)| Lit { kind, a, b, neg });
    let rule = (any::<u8>(), any::<u8>(), any::<u8>(), proptest::collection::vec(lit, 1..4))
        .prop_map(|(head, a, b, body)| RuleSpec { head, a, b, body });
    (
        1..=3u8,
        1..=6u8,
        1..=3u8,
        0..=3u8,
        1..=8u8,
        any::<u8>(),
        any::<u8>(),
        any::<bool>(),
        proptest::collection::vec(rule, 0..20),
    )
        .prop_map(|(roles, bases, moves, views, length, init, keep, var_legal, rules)| Spec {
            roles,
            bases,
            moves,
            views,
            length,
            init,
            keep,
            var_legal,
            rules,
        })
}

/// Where a literal may stand, which decides what it may refer to and so
/// keeps every game valid: `does` only in `next`, views never negated in a
/// view's body (views may recurse positively, which makes cycles in the
/// network; negation stays stratified).
#[derive(Clone, Copy, PartialEq)]
enum Place {
    Next,
    View,
    Other,
}

impl Spec {
    fn lit(&self, l: &Lit, place: Place) -> String {
        let atom = match l.kind % 3 {
            1 if self.views > 0 => format!("(v {})", l.a % self.views),
            2 if place == Place::Next => format!("(does r{} (m {}))", l.a % self.roles, l.b % self.moves),
            _ => format!("(true (b {}))", l.a % self.bases),
        };
        let is_view = atom.starts_with("(v");
        if l.neg && !(is_view && place == Place::View) {
            format!("(not {atom})")
        } else {
            atom
        }
    }

    /// The game in KIF.
    fn kif(&self) -> String {
        let mut t = String::new();
        let (bases, roles, len) = (self.bases, self.roles, self.length);
        for r in 0..roles {
            writeln!(t, "(role r{r})").unwrap();
        }
        writeln!(t, "(init (step 0))").unwrap();
        for i in 0..bases.min(8) {
            if self.init >> i & 1 == 1 {
                writeln!(t, "(init (b {i}))").unwrap();
            }
            if self.keep >> i & 1 == 1 {
                writeln!(t, "(keep {i})").unwrap();
            }
        }
        for k in 0..len {
            writeln!(t, "(succ {k} {})", k + 1).unwrap();
        }
        t.push_str("(<= (next (step ?y)) (true (step ?x)) (succ ?x ?y))\n");
        writeln!(t, "(<= terminal (true (step {len})))").unwrap();
        t.push_str("(<= (legal ?r noop) (role ?r))\n");
        t.push_str("(<= (next (b ?i)) (true (b ?i)) (keep ?i))\n");
        t.push_str("(<= (goal ?r 0) (role ?r) (not (true (b 0))))\n");
        if self.var_legal {
            for j in 0..self.moves.min(bases) {
                writeln!(t, "(idx {j})").unwrap();
            }
            t.push_str("(<= (legal ?r (m ?j)) (role ?r) (idx ?j) (true (b ?j)))\n");
        }
        for rule in &self.rules {
            // Next 40%, legal 20%, views 20%, goals and terminal 10% each.
            let (head, place) = match rule.head % 10 {
                4 | 5 => (format!("(legal r{} (m {}))", rule.a % roles, rule.b % self.moves), Place::Other),
                6 | 7 if self.views > 0 => (format!("(v {})", rule.a % self.views), Place::View),
                8 => (format!("(goal r{} {})", rule.a % roles, [0, 50, 100][rule.b as usize % 3]), Place::Other),
                9 => ("terminal".to_string(), Place::Other),
                _ => (format!("(next (b {}))", rule.a % bases), Place::Next),
            };
            let mut body: Vec<String> = rule.body.iter().map(|l| self.lit(l, place)).collect();
            if head == "terminal" {
                // Games that end at once test little.
                body.push("(not (true (step 0)))".into());
            }
            writeln!(t, "(<= {head} {})", body.join(" ")).unwrap();
        }
        t
    }
}

/// One machine's view of a state, in names every machine shares.
#[derive(Debug, PartialEq, Eq)]
struct Outputs {
    state: Vec<String>,
    terminal: bool,
    goals: Vec<Vec<u8>>,
    legal: Vec<Vec<String>>,
}

fn outputs<M: StateMachine>(m: &mut M, s: &M::State) -> Outputs {
    let roles = m.roles().len();
    let terminal = m.is_terminal(s).unwrap();
    let mut goals = vec![Vec::new(); roles];
    let mut legal = vec![Vec::new(); roles];
    let mut moves = Vec::new();
    for r in 0..roles {
        m.goal_values(s, r, &mut goals[r]).unwrap();
        if !terminal {
            m.legal_moves(s, r, &mut moves).unwrap();
            legal[r] = moves.iter().map(|&x| m.move_kif(x)).collect();
            legal[r].sort();
        }
    }
    Outputs { state: m.state_kif(s), terminal, goals, legal }
}

/// `m`'s move named `kif` for `role` in `s`.
fn find_move<M: StateMachine>(m: &mut M, s: &M::State, role: usize, kif: &str) -> M::Move {
    let mut moves = Vec::new();
    m.legal_moves(s, role, &mut moves).unwrap();
    moves.into_iter().find(|&x| m.move_kif(x) == kif).unwrap_or_else(|| panic!("no move {kif}"))
}

/// Random walks (`seeds`) on the prover and `m` side by side: the same
/// outputs in every state. Calls `visit` with `m`'s states and joint moves
/// (`None` at the end of a walk).
fn walks<M: StateMachine>(
    prover: &mut Prover,
    m: &mut M,
    seeds: &[u64],
    what: &str,
    mut visit: impl FnMut(&mut M, &M::State, Option<&[M::Move]>),
) -> Result<(), TestCaseError> {
    for &seed in seeds {
        let mut rng = Rng::new(seed);
        let (mut ps, mut ms) = (prover.initial_state().unwrap(), m.initial_state().unwrap());
        for step in 0.. {
            let want = outputs(prover, &ps);
            let got = outputs(m, &ms);
            prop_assert_eq!(&want, &got, "{}: seed {}, step {}", what, seed, step);
            if want.terminal {
                visit(m, &ms, None);
                break;
            }
            let kifs: Vec<&String> = want.legal.iter().map(|l| &l[rng.below(l.len())]).collect();
            let pj: Vec<_> = kifs.iter().enumerate().map(|(r, k)| find_move(prover, &ps, r, k)).collect();
            let mj: Vec<_> = kifs.iter().enumerate().map(|(r, k)| find_move(m, &ms, r, k)).collect();
            visit(m, &ms, Some(&mj));
            ps = prover.next_state(&ps, &pj).unwrap();
            ms = m.next_state(&ms, &mj).unwrap();
        }
    }
    Ok(())
}

/// A lane source that asks one lane for one thing: the child of a joint
/// move (`Expand`), or the goals of a playout from a state (`Start`).
struct Probe<'a> {
    parent: &'a [u64],
    joint: Option<&'a [u32]>,
    asked: bool,
    expanded: Option<(Vec<u64>, bool, Vec<Vec<u32>>)>,
    finished: Option<(Vec<i32>, u32)>,
}

impl LaneSource for Probe<'_> {
    fn next_start(&mut self, lane: usize) -> Refill<'_> {
        if lane != 0 || self.asked {
            return Refill::Stop;
        }
        self.asked = true;
        match self.joint {
            Some(joint) => Refill::Expand { parent: self.parent, joint, report: true },
            None => Refill::Start(self.parent),
        }
    }

    fn finished(&mut self, _lane: usize, goals: &[i32], length: u32) {
        self.finished = Some((goals.to_vec(), length));
    }

    fn expanded(&mut self, _lane: usize, child: &[u64], terminal: bool, legal: &[Vec<u32>]) {
        self.expanded = Some((child.to_vec(), terminal, legal.to_vec()));
    }
}

/// The lanes against the JIT (itself checked against the prover) at one
/// state of a walk: the child of the joint move played there, whether it
/// is terminal and its legal moves; at a terminal state, the goals of a
/// playout of length 0.
fn lanes_agree(m: &mut NativeMachine, s: &propel_runtime::propnet::NetState, joint: Option<&[u32]>, what: &str) {
    let Some(mut runner) = m.lane_runner() else { return };
    let mut probe = Probe { parent: s.bits(), joint, asked: false, expanded: None, finished: None };
    runner.stream(&mut probe, 7, 1000).unwrap_or_else(|e| panic!("{what}: lanes: {e}"));
    let roles = m.roles().len();
    match joint {
        Some(joint) => {
            let (child, terminal, legal) = probe.expanded.unwrap_or_else(|| panic!("{what}: no expansion"));
            let next = m.next_state(s, joint).unwrap();
            assert_eq!(child, next.bits(), "{what}: lane child");
            let t = m.is_terminal(&next).unwrap();
            assert_eq!(terminal, t, "{what}: lane terminal");
            if !t {
                let mut moves = Vec::new();
                assert_eq!(legal.len(), roles, "{what}: lane legal moves of every role");
                for (r, lane_legal) in legal.iter().enumerate() {
                    m.legal_moves(&next, r, &mut moves).unwrap();
                    moves.sort_unstable();
                    assert_eq!(*lane_legal, moves, "{what}: lane legal moves of role {r}");
                }
            }
        }
        None => {
            let (goals, length) = probe.finished.unwrap_or_else(|| panic!("{what}: no playout"));
            assert_eq!(length, 0, "{what}: a playout from a terminal state");
            let mut values = Vec::new();
            for (r, &g) in goals.iter().enumerate() {
                m.goal_values(s, r, &mut values).unwrap();
                let want = values.iter().max().map_or(-1, |&v| v as i32);
                assert_eq!(g, want, "{what}: lane goal of role {r}");
            }
        }
    }
}

fn check_game(spec: &Spec) -> Result<(), TestCaseError> {
    let text = spec.kif();
    let game = match propel_compiler::load("random.kif", text.clone()) {
        Ok(g) => Arc::new(g),
        Err(e) => return Err(TestCaseError::fail(format!("a generated game is refused: {e}\n{text}"))),
    };
    let seeds = [1, 2, 3];
    let mut prover = Prover::new(game.clone()).unwrap();
    let mut lists: Vec<(String, Vec<Pass>)> = vec![("no pass".into(), Vec::new())];
    lists.extend(Pass::EVERY.iter().map(|p| (p.name().to_string(), vec![*p])));
    lists.push(("the default pipeline".into(), Pass::DEFAULT.to_vec()));
    for (label, passes) in lists {
        let mut net = propnet_machine(&game, &passes);
        walks(&mut prover, &mut net, &seeds, &format!("propnet after {label}\n{text}"), |_, _, _| {})?;
    }
    let p = propel_runtime::build::prepare(&game, &Default::default()).unwrap();
    let (mut jit, _) = p.jit(&game.name).unwrap();
    let what = format!("JIT\n{text}");
    let mut steps = Vec::new();
    walks(&mut prover, &mut jit, &seeds, &what, |_, s, j| steps.push((s.clone(), j.map(<[u32]>::to_vec))))?;
    for (s, j) in &steps {
        lanes_agree(&mut jit, s, j.as_deref(), &format!("lanes\n{text}"));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_games(spec in spec()) {
        check_game(&spec)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Many more cases (minutes): `scripts/proptest.sh`.
    #[test]
    #[ignore]
    fn random_games_many(spec in spec()) {
        check_game(&spec)?;
    }
}
