//! Building propnet machines from games: the compile pipeline, then (when
//! the `split` pass is asked for) the split network.

use crate::lookup::LookupMachine;
use crate::machine::{MachineError, StateMachine};
use crate::propnet::NetState;
use crate::propnet::{PropnetMachine, Topology};
use crate::prover::Prover;
use crate::rng::Rng;
use crate::simulate::Simulator;
use propel_compiler::ground::GroundLimits;
use propel_compiler::lookup::Lookups;
use propel_compiler::lower::CodegenOptions;
use propel_compiler::pipeline::{compile, compile_or_lookup, CompileError, Compiled, StageReport};
use propel_compiler::propnet::passes::{specialise, Pass};
use propel_compiler::propnet::Propnet;
use propel_compiler::Game;
use std::sync::Arc;
use std::time::Instant;

/// How to build a game's machines: the grounding budget, the propnet
/// passes, and how native code is generated. A value passed down from the
/// command line; nothing below reads the environment.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    pub limits: GroundLimits,
    pub passes: Vec<Pass>,
    pub codegen: CodegenOptions,
    /// Whether a game whose goal or terminal logic is over the grounding
    /// budget may be built without it (`propel_compiler::lookup`). Only for
    /// callers that then play it on [`Prepared::lookup_machine`]: the
    /// network alone cannot answer those outputs.
    pub lookups: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            limits: GroundLimits::default(),
            passes: Pass::DEFAULT.to_vec(),
            codegen: CodegenOptions::default(),
            lookups: false,
        }
    }
}

/// What the split pass did.
#[derive(Clone, Debug)]
pub struct SplitReport {
    /// The base proposition the copies are specialised on.
    pub base: String,
    /// How often it changed per state change in the sampled playouts.
    pub changes_per_step: f64,
    pub before: usize,
    /// Components of the copy for the proposition false, and true.
    pub after: [usize; 2],
    /// Counter updates per state change in the sampled playouts, without
    /// and with the split (the same games on both: one seed, one count);
    /// the split is kept when it does less work.
    pub work: [f64; 2],
    /// State changes the sample made (the same on both).
    pub steps: u64,
    pub kept: bool,
    pub seconds: f64,
}

pub struct Built {
    pub machine: PropnetMachine,
    pub report: Vec<StageReport>,
    pub split: Option<SplitReport>,
    /// Relations grounding computed on demand (magic sets).
    pub demand: Vec<String>,
    /// The playout network before the split (the one `check --propnet` shows).
    pub net: Propnet,
    /// The goal network, when the goal logic was split off.
    pub goal_net: Option<Propnet>,
}

/// A base must change on at least this share of steps to split on it.
const MIN_CHANGE_RATE: f64 = 0.25;

/// Native code keeps a split only when the copies did at least this much
/// less work than the unsplit network: they double the code to generate
/// (hex: code generation 1.5 s split instead of 0.9 s, for a 10% faster
/// interpreter), and the interpreter builds its copies in no time.
const NATIVE_SPLIT_GAIN: f64 = 1.2;

/// Larger networks are not tried split: two specialised copies cost more
/// to build than the sampled gain is likely to repay.
const MAX_SPLIT_COMPONENTS: usize = 300_000;

/// The sample behind the split decision: playouts from the initial state
/// with one seed, at most this many state changes in all, and no more
/// state changes once the unsplit network has made this many counter
/// updates. Counted, not timed, so every build of a game decides the same
/// on any machine. The update bound keeps the sample's cost within a few
/// seconds of interpreter time: linesOfAction (5,070 updates per state
/// change, 1.4k states/s) spent 28.7 s of a 29.5 s build on 20,000 steps
/// three times over.
const SAMPLE_STEPS: u64 = 20_000;
const SAMPLE_UPDATES: u64 = 5_000_000;
const SAMPLE_SEED: u64 = 0x5eed;

/// Runs the sample's random playouts on `m`, calling `step(s, next)` at
/// every state change, until `max_steps` state changes or (when given)
/// `max_updates` counter updates; returns the state changes made.
fn sample(
    m: &mut PropnetMachine,
    max_steps: u64,
    max_updates: Option<u64>,
    mut step: impl FnMut(&NetState, &NetState),
) -> u64 {
    let mut rng = Rng::new(SAMPLE_SEED);
    let roles = m.roles().len();
    let (mut moves, mut joint) = (Vec::new(), Vec::with_capacity(roles));
    let mut steps = 0u64;
    let first = m.updates();
    'games: while steps < max_steps {
        let Ok(mut s) = m.initial_state() else { break };
        let start = steps;
        loop {
            match m.is_terminal(&s) {
                Ok(false) => {}
                // A terminal initial state would give every game zero steps.
                Ok(true) if steps == start => break 'games,
                Ok(true) => continue 'games,
                Err(_) => break 'games,
            }
            joint.clear();
            for r in 0..roles {
                if m.legal_moves(&s, r, &mut moves).is_err() || moves.is_empty() {
                    break 'games;
                }
                joint.push(moves[rng.below(moves.len())]);
            }
            let Ok(next) = m.next_state(&s, &joint) else { break 'games };
            step(&s, &next);
            steps += 1;
            s = next;
            if steps >= max_steps || max_updates.is_some_and(|u| m.updates() - first >= u) {
                break 'games;
            }
        }
    }
    steps
}

/// How often each base proposition changes per state change, in the
/// sample, and the sample's length in state changes.
fn change_rates(m: &mut PropnetMachine, bound: SampleBound) -> (Vec<f64>, u64) {
    let mut changes = vec![0u64; m.topologies()[0].bases()];
    let steps = sample(m, bound.steps, Some(bound.updates), |s, next| {
        for (w, (a, b)) in s.bits().iter().zip(next.bits()).enumerate() {
            let mut d = a ^ b;
            while d != 0 {
                changes[w * 64 + d.trailing_zeros() as usize] += 1;
                d &= d - 1;
            }
        }
    });
    (changes.iter().map(|&c| c as f64 / steps.max(1) as f64).collect(), steps)
}

/// Counter updates per state change over the sample's first `steps` state
/// changes (the same games on every machine).
fn sample_work(m: &mut PropnetMachine, steps: u64) -> f64 {
    let before = m.updates();
    let steps = sample(m, steps, None, |_, _| {});
    (m.updates() - before) as f64 / steps.max(1) as f64
}

/// A split decision: the base, and the copies for it false and true.
struct Split {
    base: usize,
    off: Propnet,
    on: Propnet,
    report: SplitReport,
}

/// How long the split decision's first sample may run (the others replay
/// its steps).
#[derive(Clone, Copy, Debug)]
struct SampleBound {
    steps: u64,
    updates: u64,
}

const SAMPLE_BOUND: SampleBound = SampleBound { steps: SAMPLE_STEPS, updates: SAMPLE_UPDATES };

/// Tries the split network on `c`: the base that changes most often in the
/// sampled playouts, both copies' work counted against the single
/// network's on the same playouts. `None` when no base changes often
/// enough.
fn try_split(c: &Compiled, single: &PropnetMachine, bound: SampleBound) -> Option<Split> {
    if c.net.len() > MAX_SPLIT_COMPONENTS {
        return None;
    }
    let t = Instant::now();
    let (rates, steps) = change_rates(&mut single.clone(), bound);
    let (base, rate) = rates
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(i, &r)| (i, r))
        .filter(|&(_, r)| r >= MIN_CHANGE_RATE)?;
    let off = specialise(&c.net, base, false);
    let on = specialise(&c.net, base, true);
    let mut split = PropnetMachine::split(
        base as u32,
        Arc::new(Topology::new(&off, c.goal_net.clone())),
        Arc::new(Topology::new(&on, c.goal_net.clone())),
    );
    let work = [sample_work(&mut single.clone(), steps), sample_work(&mut split, steps)];
    let kept = work[1] < work[0];
    tracing::debug!(
        "split on {} (changes on {:.0}% of steps): {} -> {} + {} components; {:.0} updates per state change unsplit, {:.0} split: {}",
        c.net.bases[base].name,
        rate * 100.0,
        c.net.len(),
        off.len(),
        on.len(),
        work[0],
        work[1],
        if kept { "kept" } else { "dropped" }
    );
    let report = SplitReport {
        base: c.net.bases[base].name.clone(),
        changes_per_step: rate,
        before: c.net.len(),
        after: [off.len(), on.len()],
        work,
        steps,
        kept,
        seconds: t.elapsed().as_secs_f64(),
    };
    Some(Split { base, off, on, report })
}

/// A compiled propnet with the split decided (measured, as the interpreter
/// runs it): both the interpreted and the native machine can be made from
/// it without grounding again.
pub struct Prepared {
    compiled: Compiled,
    codegen: CodegenOptions,
    split: Option<Split>,
    single: PropnetMachine,
    /// The lanes' network ([`Pass::LANES`] after the pipeline), made when
    /// native code first asks for it.
    lane_net: std::sync::OnceLock<Propnet>,
}

/// Grounds, compiles and optimises `game`, and decides the split network.
pub fn prepare(game: &Arc<Game>, opts: &BuildOptions) -> Result<Prepared, CompileError> {
    let c = match opts.lookups {
        true => compile_or_lookup(game, &opts.limits, &opts.passes)?,
        false => compile(game, &opts.limits, &opts.passes)?,
    };
    let mut topo = Topology::new(&c.net, c.goal_net.clone());
    if let Some(rules) = &c.questions {
        topo = topo.with_questions(&c.net, rules.clone()).map_err(|e| CompileError::Questions(e.to_string()))?;
    }
    let single = PropnetMachine::new(Arc::new(topo));
    // A build stopped from outside (a match's abort or start clock) skips
    // the split's sample playouts: the network works without it.
    // Relaxed: the flag publishes no data.
    let cancelled = opts.limits.cancel.as_ref().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed));
    // Without its terminal logic the network's sample playouts would not
    // end: no split.
    let split = if opts.passes.contains(&Pass::Split) && !cancelled && !c.lookups.any() {
        try_split(&c, &single, SAMPLE_BOUND)
    } else {
        None
    };
    Ok(Prepared { compiled: c, codegen: opts.codegen.clone(), split, single, lane_net: Default::default() })
}

impl Prepared {
    fn kept_split(&self) -> Option<&Split> {
        self.split.as_ref().filter(|s| s.report.kept)
    }

    /// The outputs the network leaves to lookups on the rules (only with
    /// [`BuildOptions::lookups`]); when any, play it on
    /// [`Prepared::lookup_machine`].
    pub fn lookups(&self) -> Lookups {
        self.compiled.lookups
    }

    /// The relations the network asks as questions of the state (see
    /// [`propel_compiler::queries`]), as written in the file.
    pub fn asked(&self) -> &[String] {
        &self.compiled.asked
    }

    /// The interpreted machine with the lookups answered by `prover`, a
    /// prover of the whole game (not of the rules the network was built
    /// from).
    pub fn lookup_machine(&self, prover: Prover) -> Result<LookupMachine<PropnetMachine>, MachineError> {
        self.with_lookups(self.propnet(), prover)
    }

    /// `inner`, a machine of this network (the interpreter or the JIT),
    /// with the lookups answered by `prover` (see [`Prepared::lookup_machine`]).
    pub fn with_lookups<M: Simulator<State = NetState, Move = u32>>(
        &self,
        inner: M,
        prover: Prover,
    ) -> Result<LookupMachine<M>, MachineError> {
        let names: Vec<String> = self.compiled.net.bases.iter().map(|b| b.name.clone()).collect();
        LookupMachine::new(inner, prover, &names, self.lookups())
    }

    /// The interpreted machine.
    pub fn propnet(&self) -> PropnetMachine {
        let goal_net = &self.compiled.goal_net;
        match self.kept_split() {
            Some(s) => PropnetMachine::split(
                s.base as u32,
                Arc::new(Topology::new(&s.off, goal_net.clone())),
                Arc::new(Topology::new(&s.on, goal_net.clone())),
            ),
            None => self.single.clone(),
        }
    }

    /// What to generate native code from: the network (or the split
    /// copies, when they gained at least `NATIVE_SPLIT_GAIN`), the goal
    /// network, and the unsplit network for lanes. When the pipeline left
    /// a smaller eliminated network for native code
    /// ([`propel_compiler::pipeline::NATIVE_ELIMINATED`]), that one,
    /// unsplit (the split was measured on the interpreter's network).
    pub fn lower_machine(&self) -> propel_compiler::lower::Machine<'_> {
        let worth = |s: &&Split| s.report.work[0] >= NATIVE_SPLIT_GAIN * s.report.work[1];
        let split = self.kept_split().filter(worth).filter(|_| self.compiled.native.is_none());
        let (engines, split) = match split {
            Some(s) => (vec![&s.off, &s.on], Some(s.base as u32)),
            None => (vec![self.native_net()], None),
        };
        propel_compiler::lower::Machine {
            engines,
            split,
            goal_net: self.native_goal_net(),
            lanes: Some(self.lane_net()),
        }
    }

    /// The lanes' network: the native network, factored down to the
    /// bottom ([`Pass::LANES`]); the same bases and inputs.
    pub fn lane_net(&self) -> &Propnet {
        self.lane_net.get_or_init(|| {
            Pass::LANES.iter().fold(self.native_net().clone(), |n, &p| propel_compiler::propnet::passes::apply(n, p))
        })
    }

    /// The (unsplit) network native code is generated from: the playout
    /// network, or the smaller one the pipeline left for native code.
    pub fn native_net(&self) -> &Propnet {
        self.compiled.native.as_ref().map_or(&self.compiled.net, |n| &n.net)
    }

    /// The goal network that goes with [`Prepared::native_net`].
    pub fn native_goal_net(&self) -> Option<&Propnet> {
        match &self.compiled.native {
            Some(n) => n.goal_net.as_ref(),
            None => self.compiled.goal_net.as_ref(),
        }
    }

    /// Native code generated in memory for the same network.
    pub fn jit(
        &self,
        name: &str,
    ) -> Result<(crate::native::NativeMachine, propel_compiler::lower::CodeStats), JitError> {
        let machine = self.lower_machine();
        let code = propel_compiler::lower::jit(&machine, name, &self.codegen)?;
        let stats = code.stats().clone();
        let native = crate::native::NativeCode::from_jit(code)?
            .with_goal_net(self.native_goal_net(), crate::native::GOAL_PROGRAM_COMPONENTS);
        Ok((crate::native::NativeMachine::new(Arc::new(native)), stats))
    }

    /// Whether the playout network was built from eliminated rules.
    pub fn eliminated(&self) -> bool {
        self.compiled.eliminated
    }

    /// Whether native code comes from the eliminated network the pipeline
    /// left beside a playout network built as written.
    pub fn native_is_eliminated(&self) -> bool {
        self.compiled.native.is_some()
    }

    /// How native code is generated from this build.
    pub fn codegen(&self) -> &CodegenOptions {
        &self.codegen
    }

    /// The playout network.
    pub fn net(&self) -> &Propnet {
        &self.compiled.net
    }

    /// The goal network, when the goal logic was split off.
    pub fn goal_net(&self) -> Option<&Propnet> {
        self.compiled.goal_net.as_ref()
    }

    pub fn report(&self) -> &[StageReport] {
        &self.compiled.report
    }

    /// What the split pass did (measured whether it was kept or not).
    pub fn split_report(&self) -> Option<&SplitReport> {
        self.split.as_ref().map(|s| &s.report)
    }

    /// Relations grounding computed on demand (magic sets).
    pub fn demand(&self) -> &[String] {
        &self.compiled.demand
    }
}

/// Grounds, compiles and optimises `game`, and builds its machine.
pub fn propnet_machine(game: &Arc<Game>, opts: &BuildOptions) -> Result<Built, CompileError> {
    let p = prepare(game, opts)?;
    let machine = p.propnet();
    let Prepared { compiled: c, split, .. } = p;
    Ok(Built {
        machine,
        report: c.report,
        split: split.map(|s| s.report),
        demand: c.demand,
        net: c.net,
        goal_net: c.goal_net,
    })
}

/// A JIT machine: what it took to build, and the machine.
pub struct BuiltJit {
    pub machine: crate::native::NativeMachine,
    pub report: Vec<StageReport>,
    pub code: propel_compiler::lower::CodeStats,
    pub demand: Vec<String>,
    pub net: Propnet,
    pub goal_net: Option<Propnet>,
}

/// Grounds, compiles and optimises `game`, decides the split as the
/// interpreter does (measured), then generates native code in memory.
pub fn jit_machine(game: &Arc<Game>, opts: &BuildOptions) -> Result<BuiltJit, JitError> {
    let p = prepare(game, opts)?;
    let (machine, code) = p.jit(&game.name)?;
    let Prepared { compiled: c, .. } = p;
    Ok(BuiltJit { machine, report: c.report, code, demand: c.demand, net: c.net, goal_net: c.goal_net })
}

#[derive(Debug, thiserror::Error)]
pub enum JitError {
    #[error(transparent)]
    Compile(#[from] CompileError),
    #[error(transparent)]
    Lower(#[from] propel_compiler::lower::LowerError),
    #[error("the generated code describes itself inconsistently")]
    Meta(#[from] propel_abi::MetaError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_sample_stops_at_its_update_bound_and_the_work_samples_replay_it() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../games/breakthrough.kif");
        let game = Arc::new(propel_compiler::load_file(&path).unwrap());
        let c = compile(&game, &Default::default(), Pass::DEFAULT).unwrap();
        let single = PropnetMachine::new(Arc::new(Topology::new(&c.net, c.goal_net.clone())));
        // Setting up the initial state already counts some updates.
        let base = single.updates();
        let mut m = single.clone();
        let steps = sample(&mut m, SAMPLE_STEPS, Some(50_000), |_, _| {});
        assert!(steps > 0 && steps < SAMPLE_STEPS, "{steps} steps");
        // Stopped at the first state change past the bound.
        let work = m.updates() - base;
        let per_step = work as f64 / steps as f64;
        assert!((work as f64) < 50_000.0 + 4.0 * per_step, "{work} updates");
        // The same number of steps again: the same games, the same work.
        let mut again = single.clone();
        assert_eq!(sample(&mut again, steps, None, |_, _| {}), steps);
        assert_eq!(again.updates(), m.updates());
        // The decision itself: its first sample stops at the bound, and
        // the unsplit work is counted on exactly those steps.
        let split = try_split(&c, &single, SampleBound { steps: SAMPLE_STEPS, updates: 50_000 }).expect("a split");
        assert_eq!(split.report.steps, steps);
        assert_eq!(split.report.work[0], per_step);
        let full = try_split(&c, &single, SAMPLE_BOUND).expect("a split");
        assert!(full.report.steps > steps, "{} steps", full.report.steps);
    }
}
