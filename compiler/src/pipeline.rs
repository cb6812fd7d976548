//! The compile pipeline as one call: a validated game to an optimised
//! propnet, with what each stage took.

use crate::deadline::Deadline;
use crate::game::Game;
use crate::ground::{ground_learning, GroundError, GroundLimits, Learned};
use crate::lookup::Lookups;
use crate::propnet::{from_ground_until, passes, Propnet, PropnetError};
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    #[error(transparent)]
    Ground(#[from] GroundError),
    #[error(transparent)]
    Propnet(#[from] PropnetError),
    /// The network's query components cannot be answered (a term of the
    /// network that the rules do not know: a bug, not the game's fault).
    #[error("the network's questions cannot be set up: {0}")]
    Questions(String),
}

impl CompileError {
    /// Whether the build ran out of time (or was cancelled).
    pub fn is_timeout(&self) -> bool {
        match self {
            CompileError::Ground(e) => e.is_timeout(),
            CompileError::Propnet(e) => matches!(e, PropnetError::Timeout { .. }),
            CompileError::Questions(_) => false,
        }
    }
}

/// How one stage went: its name, seconds, and the network after it.
#[derive(Clone, Debug)]
pub struct StageReport {
    pub stage: String,
    pub seconds: f64,
    pub counts: crate::propnet::Counts,
}

/// The result of compiling a game to propnets.
pub struct Compiled {
    /// The network used for playouts.
    pub net: Propnet,
    /// The goal network, when the goal logic was split off.
    pub goal_net: Option<Propnet>,
    pub report: Vec<StageReport>,
    /// Relations that grounding computed on demand (magic sets).
    pub demand: Vec<String>,
    /// A smaller network of the same game for native code, when there is
    /// one (see [`NATIVE_ELIMINATED`]).
    pub native: Option<Box<NativeNet>>,
    /// Whether `net` was built from the rules rewritten by variable
    /// elimination (kept at a quarter of the edges or less).
    pub eliminated: bool,
    /// What `net` leaves to the rules (nothing unless
    /// [`compile_or_lookup`] needed it): its goal or terminal logic is
    /// then missing, or it has query components, and a machine must
    /// answer them otherwise.
    pub lookups: Lookups,
    /// The rules its query components are answered from, when it has any.
    pub questions: Option<Arc<crate::topdown::Rules>>,
    /// The relations asked as questions, as written in the file.
    pub asked: Vec<String>,
}

/// The eliminated network of a game whose interpreter keeps the rules as
/// written, for native code: it numbers bases and inputs exactly as
/// [`Compiled::net`] does, so that a state or move means the same on both.
pub struct NativeNet {
    pub net: Propnet,
    pub goal_net: Option<Propnet>,
}

/// Native code is generated from the eliminated network when it has at
/// most this share of the edges (and the interpreter keeps the network as
/// written, under a quarter's gain). Code generation and the lanes' work
/// grow with the edges, while the interpreter's differential update grows
/// with how many components flip: on racer's eliminated network (39% of
/// the edges) the interpreter ran 7.7k playouts/s against 18.2k as
/// written, but the JIT's lanes 15.9k against 8.6k, and code generation
/// took 0.57 s against 1.27 s. At 27-56% of the edges (`propel bench
/// --threads 1`, eliminated against as written, JIT playouts/s): atariGo
/// 7x7 13.1k vs 7.0k, blokbox_simple 23.2k vs 17.1k, mummymaze-orig
/// 373k vs 205k, hexPie 7.8k vs 10.0k, hexforthree 12.2k vs 15.5k.
pub const NATIVE_ELIMINATED: f64 = 0.6;

/// The share of the time limit the rules as written get for grounding
/// when a second build from eliminated rules may follow (their network
/// and passes may take the rest too); the second gets what is left.
pub const FIRST_BUILD_SHARE: f64 = 0.6;

/// The share of the time limit the network as written may use, passes
/// included, when the eliminated rules will be built too (a rewrite whose
/// rules hold at least [`ELIMINATE_SHARE`] of the ground literals): the
/// rest is left to the second build, which keeps the game when the first
/// runs out. gt_attrition's network as written (4.1M components) builds in
/// 38 s alone, but under load its passes ran past the 60 s budget and the
/// build failed, where its eliminated rules build in a second.
pub const FIRST_PASSES_SHARE: f64 = 0.85;

/// The rules as written are not built into a network when variable
/// elimination leaves at most this share of their ground literals
/// (counted, so every build of a game decides alike), and the eliminated
/// network is kept. The passes shrink a network by far less than that
/// ratio: in a corpus scan (4d2eadb) the largest gap between ground literals
/// and final edges, as written against eliminated, was racer's (13.5 times
/// fewer literals eliminated, 2.6 times fewer edges), while the attrition
/// games ground to 143 times fewer literals (28.9M against 201k) and end
/// with 80 times fewer edges; building their network as written took
/// 25-35 s of a 40 s build.
pub const DECISIVE_LITERALS: usize = 32;

/// ... for rules as written with at least this many ground literals (a
/// smaller game builds both networks in a few seconds and compares them).
pub const DECISIVE_MIN_LITERALS: usize = 1_000_000;

/// When the rules as written need their last grounding attempt (the one
/// without a row limit) and variable elimination has rewritten them, that
/// attempt first gets [`ELIMINATED_FIRST_SHARE`] of the time limit. If it
/// runs out, the eliminated rules are built (within the same share); a
/// network of theirs under this many edges is kept and the rules as
/// written get no more time, otherwise they get their last attempt again
/// with the time left. The two-thirds games' `total` adds up every
/// combination of 4 or 6 bids (101^4 as written): their last attempt ran
/// out the first build's whole share (36 s of the 60 s budget) before the
/// eliminated rules built in 1-3 s into networks of 404 and 606 edges.
pub const ELIMINATED_FIRST_EDGES: usize = ELIMINATE_EDGES;

/// The share of the time limit for the sliced last attempt and for the
/// eliminated build after it ([`ELIMINATED_FIRST_EDGES`]). A slice rather
/// than building the eliminated rules at once: where the rules as written
/// are kept, that build is wasted (ad_game_2x2's eliminated network took
/// 6.4 s where its last attempt takes 0.6 s and the build 0.9 s in all;
/// amazonsTorus' 22 s).
pub const ELIMINATED_FIRST_SHARE: f64 = 0.15;

/// Networks with at least this many edges are built again from the rules
/// rewritten by variable elimination ([`passes::Pass::Eliminate`]).
pub const ELIMINATE_EDGES: usize = 100_000;

/// ... when the rules elimination rewrites hold at least this share of the
/// ground literals.
pub const ELIMINATE_SHARE: f64 = 0.5;

/// Grounds `game`, builds its propnet and runs `passes` in order.
///
/// With [`passes::Pass::Eliminate`], a dense network (or a game over the
/// grounding budget) is built a second time from the rules rewritten by
/// variable elimination, and the smaller network kept
/// when it has at most a quarter of the edges: quarto's goes from 564k to
/// 8k edges, but racer's, at 39% of the edges, ran half as fast (the
/// eliminated helpers, over functional state like a car's position, flip
/// together at every move), so a small gain keeps the network as written.
/// The choice depends on the rules alone, so every build of a game agrees,
/// except where the second build runs out of the time the first left
/// (then the network as written is kept).
/// An eliminated network not kept may still be left for native code
/// ([`Compiled::native`], [`NATIVE_ELIMINATED`]).
///
/// Everything, both builds included, runs under one time limit
/// (`limits.time` from the call): the build stops at that time, whichever
/// stage it is in. The second build gets the time the first left.
pub fn compile(game: &Arc<Game>, limits: &GroundLimits, passes: &[passes::Pass]) -> Result<Compiled, CompileError> {
    compile_learning(game, limits, passes, &Learned::default())
}

/// [`compile`], its groundings starting from what earlier builds of the
/// same game learned (and adding to it): a demand rewrite found hopeless
/// once is not tried again.
fn compile_learning(
    game: &Arc<Game>,
    limits: &GroundLimits,
    passes: &[passes::Pass],
    learned: &Learned,
) -> Result<Compiled, CompileError> {
    let ground =
        |g: &Arc<Game>, limits: &GroundLimits, deadline: &Deadline| ground_learning(g, limits, deadline, learned);
    let start = Instant::now();
    let deadline = limits.deadline(start);
    // Fluents that never change are read as static relations (their
    // initial facts) by every build below.
    let fixed = crate::fixed::read_fixed_fluents(game).map(Arc::new);
    let game = fixed.as_ref().unwrap_or(game);
    let eliminate = passes.contains(&passes::Pass::Eliminate);
    let rewrite = if eliminate { crate::project::eliminate_locals(game) } else { None };
    if let Some(r) = &rewrite {
        tracing::debug!(relations = ?r.touched, "variable elimination: rules rewritten");
    }
    // Grounding works on the projected rules (local variables projected
    // out, independent literal groups split off); the magic-set rewrite,
    // when one is needed, rewrites those.
    let projected = crate::project::project_locals(game).map(Arc::new);
    // When elimination could follow, the rules as written get part of the
    // time, so that a game over the budget as written still has time to
    // build eliminated (stanford-iggp reversi).
    let first = match &rewrite {
        Some(_) => deadline.min(start + limits.time.mul_f64(FIRST_BUILD_SHARE)),
        None => deadline.clone(),
    };
    // Rules as written whose last grounding attempt (no row limit) runs
    // past a slice of the time while the eliminated rules build into a
    // small network are given no more time (see [`ELIMINATED_FIRST_EDGES`]).
    let (eliminated_game, touched) = match rewrite {
        Some(r) => (Some(Arc::new(r.game)), r.touched),
        None => (None, Vec::new()),
    };
    let mut early: Option<Compiled> = None;
    let mut plain_tried = 0.0;
    let mut on_slow = || -> bool {
        let Some(g) = &eliminated_game else { return true };
        plain_tried = start.elapsed().as_secs_f64();
        let until = deadline.min(Instant::now() + limits.time.mul_f64(ELIMINATED_FIRST_SHARE));
        let c = build(ground(g, limits, &until), passes, &until);
        let small = c.as_ref().is_ok_and(|c| c.net.counts().edges < ELIMINATED_FIRST_EDGES);
        tracing::debug!(small, error = ?c.as_ref().err(), "variable elimination: built before the last attempt of the rules as written");
        // A failure here had a short time: the second build tries again.
        early = c.ok();
        !small
    };
    let plain_game = projected.as_ref().unwrap_or(game);
    let ground_plain = match &eliminated_game {
        Some(_) => {
            let slice = limits.time.mul_f64(ELIMINATED_FIRST_SHARE);
            crate::ground::ground_unless_slow(plain_game, limits, &first, slice, &mut on_slow, learned)
        }
        None => ground(plain_game, limits, &first),
    };
    let early_small = early.as_ref().is_some_and(|c| c.net.counts().edges < ELIMINATED_FIRST_EDGES);
    if early_small {
        if let Some(c) = early.take() {
            let stage = "ground (as written: stopped at the slice of its attempt without a row limit)".into();
            return Ok(kept_eliminated(
                c,
                vec![StageReport { stage, seconds: plain_tried, counts: Default::default() }],
            ));
        }
    }
    // Elimination only shrinks the rules it rewrote: unless their ground
    // instances are at least half the ground literals, it cannot take the
    // network down to a quarter, and a second build would be wasted
    // (alexChess.v1: 14 s more for 0.7% fewer edges).
    let share = match (&ground_plain, &eliminated_game) {
        (Ok(g), Some(_)) => g.literal_share(&touched),
        _ => 1.0,
    };
    let plain_literals = ground_plain.as_ref().map_or(0, |g| g.literals());
    let rewrite = eliminated_game.filter(|_| share >= ELIMINATE_SHARE);
    // Once the rules as written are grounded, their network and passes
    // may use the whole time when no second build follows: it would have
    // to ground again, and on a loaded machine alexChess.v1's passes (1.2M
    // components) ran past the first build's share, when alone it builds
    // in 19 s. When one follows, they leave it a part.
    let plain_deadline = match &rewrite {
        Some(_) => deadline.min(start + limits.time.mul_f64(FIRST_PASSES_SHARE)),
        None => deadline.clone(),
    };
    // Large ground rules that elimination shrinks by far more than the
    // network's passes ever do are not built as written (see
    // [`DECISIVE_LITERALS`]).
    let mut ground_elim = None;
    if let Some(r) = rewrite.as_ref().filter(|_| plain_literals >= DECISIVE_MIN_LITERALS && early.is_none()) {
        // At most half the time left to the network as written, which
        // still needs it when this is not decisive.
        let t = Instant::now();
        let half = plain_deadline.time().map(|d| t + d.saturating_duration_since(t) / 2);
        let g = ground(r, limits, &half.map_or_else(|| deadline.clone(), |h| deadline.min(h)));
        let literals = g.as_ref().map_or(usize::MAX, |g| g.literals());
        tracing::debug!(plain_literals, eliminated_literals = literals, "variable elimination: ground literals");
        if literals.saturating_mul(DECISIVE_LITERALS) <= plain_literals {
            let plain_seconds = ground_plain.as_ref().map_or(0.0, |g| g.seconds);
            drop(ground_plain);
            return match build(g, passes, &deadline) {
                Ok(c) => {
                    let stage = format!("ground (as written: {plain_literals} literals, not built)");
                    Ok(kept_eliminated(
                        c,
                        vec![StageReport { stage, seconds: plain_seconds, counts: Default::default() }],
                    ))
                }
                // The rules as written get what time is left.
                Err(e) => {
                    tracing::debug!(error = %e, "variable elimination: the decisive build failed");
                    build(ground(plain_game, limits, &deadline), passes, &deadline)
                }
            };
        }
        // A failure here had less time than the second build will have.
        ground_elim = g.ok();
    }
    let plain = build(ground_plain, passes, &plain_deadline);
    if let Err(e) = &plain {
        tracing::debug!(error = %e, "the network as written failed");
    }
    let timed_out = deadline.passed();
    let dense = plain.as_ref().map_or(true, |c| c.net.counts().edges >= ELIMINATE_EDGES);
    let Some(rewrite) = rewrite.filter(|_| dense && !timed_out) else {
        return plain;
    };
    tracing::debug!(share, "variable elimination: building again");
    let eliminated = match early {
        Some(c) => Ok(c),
        None => build(ground_elim.map_or_else(|| ground(&rewrite, limits, &deadline), Ok), passes, &deadline),
    };
    let edges = |r: &Result<Compiled, CompileError>| r.as_ref().map(|c| c.net.counts().edges).ok();
    tracing::debug!(plain = ?edges(&plain), eliminated = ?edges(&eliminated), "variable elimination: edges");
    if let Err(e) = &eliminated {
        tracing::debug!(error = %e, "variable elimination: the second build failed");
    }
    let always = limits.always_eliminate;
    let keep = match (edges(&plain), edges(&eliminated)) {
        (None, Some(_)) => true,
        (Some(p), Some(e)) => 4 * e <= p || always,
        _ => false,
    };
    if !keep {
        let mut plain = plain?;
        plain.native = eliminated.ok().and_then(|e| native_net(&plain, e));
        return Ok(plain);
    }
    // The report shows both builds: the rules as written, then eliminated.
    let written = match &plain {
        Ok(p) => vec![
            StageReport { stage: "ground+build (as written)".into(), ..p.report[0].clone() },
            StageReport { stage: "passes (as written)".into(), ..p.report[p.report.len() - 1].clone() },
        ],
        Err(_) => Vec::new(),
    };
    Ok(kept_eliminated(eliminated?, written))
}

/// As [`compile`]; where grounding gives up in a relation that only the
/// goal or terminal logic reads, the game is built again without those
/// outputs ([`crate::lookup`]), with the time left, and the result says
/// which it lacks ([`Compiled::lookups`]). A second failure in another
/// such relation widens the set once more; any other failure, or one in
/// what `legal` and `next` read, is the first build's error.
pub fn compile_or_lookup(
    game: &Arc<Game>,
    limits: &GroundLimits,
    passes: &[passes::Pass],
) -> Result<Compiled, CompileError> {
    let start = Instant::now();
    let learned = Learned::default();
    let first = match compile_learning(game, limits, passes, &learned) {
        Err(CompileError::Ground(e)) => e,
        other => return other,
    };
    let mut lookups = Lookups::default();
    let mut error = first.clone();
    // Two rounds at most: goal, then terminal (or the other way round).
    for _ in 0..2 {
        let Some(more) = crate::lookup::for_failure(game, &error) else { break };
        let wider = lookups.union(more);
        if wider == lookups {
            break;
        }
        lookups = wider;
        let left = limits.time.saturating_sub(start.elapsed());
        let Some(reduced) = crate::lookup::without(game, lookups).filter(|_| !left.is_zero()) else { break };
        tracing::debug!(lookups = lookups.describe(), error = %error, "building again with outputs left to lookups");
        let limits = GroundLimits { time: left, ..limits.clone() };
        match compile(&Arc::new(reduced), &limits, passes) {
            Ok(mut c) => {
                c.lookups = lookups;
                return Ok(c);
            }
            Err(CompileError::Ground(e)) => error = e,
            Err(e) => {
                tracing::debug!(error = %e, "the build with lookups failed");
                break;
            }
        }
    }
    if lookups.any() {
        return Err(first.into());
    }
    compile_with_questions(game, limits, passes, start, first, &learned)
}

/// Most relations asked as questions before a build gives up.
pub const MAX_QUESTIONS: usize = 4;

/// After grounding `game` failed with `first`: the game built again with
/// the relation the error names asked as a question ([`crate::queries`]),
/// and if that fails in another such relation, with both (up to
/// [`MAX_QUESTIONS`]), in the time left. The first error when no such
/// build succeeds.
fn compile_with_questions(
    game: &Arc<Game>,
    limits: &GroundLimits,
    passes: &[passes::Pass],
    start: Instant,
    first: GroundError,
    learned: &Learned,
) -> Result<Compiled, CompileError> {
    let mut asked = Vec::new();
    let mut error = first.clone();
    while asked.len() < MAX_QUESTIONS {
        let Some(r) = crate::queries::for_failure(game, &error).filter(|r| !asked.contains(r)) else { break };
        asked.push(r);
        let left = limits.time.saturating_sub(start.elapsed());
        if left.is_zero() {
            break;
        }
        let rewritten = match crate::queries::residual(game, &asked) {
            Ok(g) => Arc::new(g),
            Err(e) => {
                tracing::debug!(error = %e, "no questions for this failure");
                break;
            }
        };
        let names: Vec<&str> = asked.iter().map(|&r| game.rel_name(r)).collect();
        tracing::info!(relations = ?names, error = %error, "building again with relations asked as questions");
        // The network must not grow its own goal network: goal logic that
        // reads answers needs the machine that sets them.
        let passes: Vec<passes::Pass> = passes.iter().copied().filter(|&p| p != passes::Pass::Goals).collect();
        let within = |left| GroundLimits { time: left, ..limits.clone() };
        // The eliminated rules first: where questions were needed the rules
        // as written are large, and chess's took 20 s of a build to fail
        // before its eliminated network built in 11.
        let built = match compile_eliminated(&rewritten, &within(left), &passes, learned) {
            Some(Ok(c)) => Ok(c),
            // Over the budget in another relation that can be asked: the
            // next round asks it too (under a player's budget chess's
            // `threatened` passes the rule limit; the rules as written
            // took 23 s to fail the same way).
            Some(Err(CompileError::Ground(e)))
                if crate::queries::for_failure(game, &e).is_some_and(|r| !asked.contains(&r)) =>
            {
                Err(CompileError::Ground(e))
            }
            // The whole pipeline, in the time left.
            _ => compile_learning(&rewritten, &within(limits.time.saturating_sub(start.elapsed())), &passes, learned),
        };
        match built {
            Ok(mut c) => {
                let questions: Vec<_> = rewritten.queries.iter().map(|q| q.question.clone()).collect();
                match crate::topdown::Rules::new(&rewritten, &questions) {
                    Ok(rules) => {
                        c.lookups = Lookups { questions: true, ..Lookups::default() };
                        c.questions = Some(Arc::new(rules));
                        c.asked = names.iter().map(|n| n.to_string()).collect();
                        return Ok(c);
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "the questions cannot be evaluated top-down");
                        break;
                    }
                }
            }
            Err(CompileError::Ground(e)) => error = e,
            Err(e) => {
                tracing::debug!(error = %e, "the build with questions failed");
                break;
            }
        }
    }
    Err(first.into())
}

/// `game` built from its rules rewritten by variable elimination only
/// (not as written), within `limits`; `None` when elimination rewrites
/// nothing.
fn compile_eliminated(
    game: &Arc<Game>,
    limits: &GroundLimits,
    passes: &[passes::Pass],
    learned: &Learned,
) -> Option<Result<Compiled, CompileError>> {
    if !passes.contains(&passes::Pass::Eliminate) {
        return None;
    }
    let deadline = limits.deadline(Instant::now());
    let fixed = crate::fixed::read_fixed_fluents(game).map(Arc::new);
    let r = crate::project::eliminate_locals(fixed.as_ref().unwrap_or(game))?;
    let c = build(ground_learning(&Arc::new(r.game), limits, &deadline, learned), passes, &deadline);
    if let Err(e) = &c {
        tracing::debug!(error = %e, "the eliminated rules alone failed");
    }
    Some(c.map(|c| kept_eliminated(c, Vec::new())))
}

/// `c`, the eliminated network, marked as kept, its report after what the
/// rules as written did (`written`).
fn kept_eliminated(mut c: Compiled, written: Vec<StageReport>) -> Compiled {
    c.eliminated = true;
    c.report[0].stage = "ground+build (eliminated)".into();
    c.report.splice(0..0, written);
    c
}

/// Builds the network of ground rules and runs the passes; the first
/// stage reported is grounding and the network together.
fn build(
    g: Result<crate::ground::Grounded, GroundError>,
    passes: &[passes::Pass],
    deadline: &Deadline,
) -> Result<Compiled, CompileError> {
    let g = g?;
    let t = Instant::now();
    let demand = g.demand.clone();
    let net = from_ground_until(&g, deadline)?;
    let seconds = g.seconds + t.elapsed().as_secs_f64();
    drop(g);
    tracing::debug!(seconds, components = net.len(), "network built");
    let mut report = vec![StageReport { stage: "ground+build".into(), seconds, counts: net.counts() }];
    let (mut net, mut goal_net) = passes::run_until(net, passes, deadline, &mut |stage, seconds, counts| {
        tracing::debug!(pass = stage, seconds, components = counts.total, "pass done");
        report.push(StageReport { stage: stage.to_string(), seconds, counts: counts.clone() })
    })?;
    net.canonical_order();
    if let Some(g) = &mut goal_net {
        g.canonical_order();
    }
    Ok(Compiled {
        net,
        goal_net,
        report,
        demand,
        native: None,
        eliminated: false,
        lookups: Lookups::default(),
        questions: None,
        asked: Vec::new(),
    })
}

/// `eliminated` as the native network of `plain`, when it is small enough
/// and has the same bases and inputs.
fn native_net(plain: &Compiled, eliminated: Compiled) -> Option<Box<NativeNet>> {
    let (p, e) = (&plain.net, &eliminated.net);
    let small = (e.counts().edges as f64) <= NATIVE_ELIMINATED * p.counts().edges as f64;
    let same = p.roles == e.roles
        && p.bases.len() == e.bases.len()
        && p.inputs.len() == e.inputs.len()
        && p.bases.iter().zip(&e.bases).all(|(a, b)| a.name == b.name && a.init == b.init)
        && p.inputs.iter().zip(&e.inputs).all(|(a, b)| a.name == b.name && a.role == b.role);
    tracing::debug!(small, same, "variable elimination: native network");
    (small && same).then(|| Box::new(NativeNet { net: eliminated.net, goal_net: eliminated.goal_net }))
}
