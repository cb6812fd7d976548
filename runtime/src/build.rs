//! Building propnet machines from games: the compile pipeline, then (when
//! the `split` pass is asked for) the split network.

use crate::machine::StateMachine;
use crate::propnet::{PropnetMachine, Topology};
use crate::rng::Rng;
use propel_compiler::ground::GroundLimits;
use propel_compiler::pipeline::{compile, CompileError, StageReport};
use propel_compiler::propnet::passes::{specialise, Pass};
use propel_compiler::propnet::Propnet;
use propel_compiler::Game;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How to build a propnet machine.
#[derive(Clone, Debug)]
pub struct PropnetOptions {
    pub limits: GroundLimits,
    pub passes: Vec<Pass>,
}

impl Default for PropnetOptions {
    fn default() -> Self {
        PropnetOptions { limits: GroundLimits::default(), passes: Pass::ALL.to_vec() }
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
    /// Sampled playout speed (state changes per second) without and with
    /// the split; the split is kept only when it is faster.
    pub speed: [f64; 2],
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
}

/// A base must change on at least this share of steps to split on it.
const MIN_CHANGE_RATE: f64 = 0.25;

/// Larger networks are not tried split: two specialised copies cost more
/// to build than the sampled gain is likely to repay.
const MAX_SPLIT_COMPONENTS: usize = 300_000;

/// How often each base proposition changes per step, from random playouts
/// (up to `budget` of them, or 0.3 s).
fn change_rates(m: &mut PropnetMachine, budget: usize) -> Vec<f64> {
    let nbases = m.topologies()[0].bases();
    let mut changes = vec![0u64; nbases];
    let mut steps = 0u64;
    let mut rng = Rng::new(0x5eed);
    let start = Instant::now();
    let roles = m.roles().len();
    let mut moves = Vec::new();
    let mut joint = Vec::with_capacity(roles);
    'games: for _ in 0..budget {
        let Ok(mut s) = m.initial_state() else { break };
        for _ in 0..10_000 {
            match m.is_terminal(&s) {
                Ok(false) => {}
                _ => continue 'games,
            }
            joint.clear();
            for r in 0..roles {
                if m.legal_moves(&s, r, &mut moves).is_err() || moves.is_empty() {
                    continue 'games;
                }
                joint.push(moves[rng.below(moves.len())]);
            }
            let Ok(next) = m.next_state(&s, &joint) else { continue 'games };
            for (w, (a, b)) in s.bits().iter().zip(next.bits()).enumerate() {
                let mut d = a ^ b;
                while d != 0 {
                    changes[w * 64 + d.trailing_zeros() as usize] += 1;
                    d &= d - 1;
                }
            }
            steps += 1;
            s = next;
        }
        if start.elapsed() > Duration::from_millis(300) {
            break;
        }
    }
    changes.iter().map(|&c| c as f64 / steps.max(1) as f64).collect()
}

/// State changes per second over random playouts (same seed every time),
/// for about 0.2 s.
fn sample_speed(m: &mut PropnetMachine) -> f64 {
    let mut rng = Rng::new(0x5eed);
    let mut stats = crate::playout::PlayoutStats::default();
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(200) {
        if crate::playout::playout(m, &mut rng, &mut stats).is_err() {
            return 0.0;
        }
    }
    stats.states as f64 / start.elapsed().as_secs_f64()
}

/// Grounds, compiles and optimises `game`, and builds its machine.
pub fn propnet_machine(game: &Arc<Game>, opts: &PropnetOptions) -> Result<Built, CompileError> {
    let c = compile(game, &opts.limits, &opts.passes)?;
    let goal_net = c.goal_net.clone();
    let single = PropnetMachine::new(Arc::new(Topology::new(&c.net, goal_net.clone())));
    if !opts.passes.contains(&Pass::Split) || c.net.len() > MAX_SPLIT_COMPONENTS {
        return Ok(Built { machine: single, report: c.report, split: None, demand: c.demand, net: c.net });
    }
    let t = Instant::now();
    let mut probe = single.clone();
    let rates = change_rates(&mut probe, 200);
    let best = rates.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(i, &r)| (i, r));
    let Some((base, rate)) = best.filter(|&(_, r)| r >= MIN_CHANGE_RATE) else {
        return Ok(Built { machine: single, report: c.report, split: None, demand: c.demand, net: c.net });
    };
    let off = specialise(&c.net, base, false);
    let on = specialise(&c.net, base, true);
    let report = SplitReport {
        base: c.net.bases[base].name.clone(),
        changes_per_step: rate,
        before: c.net.len(),
        after: [off.len(), on.len()],
        speed: [0.0; 2],
        kept: false,
        seconds: 0.0,
    };
    tracing::debug!(
        "split on {} (changes on {:.0}% of steps): {} -> {} + {} components",
        report.base,
        rate * 100.0,
        report.before,
        report.after[0],
        report.after[1]
    );
    let mut split = PropnetMachine::split(
        base as u32,
        Arc::new(Topology::new(&off, goal_net.clone())),
        Arc::new(Topology::new(&on, goal_net)),
    );
    // Keep the split only if it really plays faster here.
    let speed = [sample_speed(&mut single.clone()), sample_speed(&mut split)];
    let kept = speed[1] > speed[0];
    let report = SplitReport { speed, kept, seconds: t.elapsed().as_secs_f64(), ..report };
    tracing::debug!(
        "split: {:.0} states/s unsplit, {:.0} split: {}",
        speed[0],
        speed[1],
        if kept { "kept" } else { "dropped" }
    );
    let machine = if kept { split } else { single };
    Ok(Built { machine, report: c.report, split: Some(report), demand: c.demand, net: c.net })
}
