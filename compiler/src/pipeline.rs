//! The compile pipeline as one call: a validated game to an optimised
//! propnet, with what each stage took.

use crate::game::Game;
use crate::ground::{ground, GroundError, GroundLimits};
use crate::propnet::{from_ground, passes, Propnet, PropnetError};
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    #[error(transparent)]
    Ground(#[from] GroundError),
    #[error(transparent)]
    Propnet(#[from] PropnetError),
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
}

/// Grounds `game`, builds its propnet and runs `passes` in order.
pub fn compile(game: &Arc<Game>, limits: &GroundLimits, passes: &[passes::Pass]) -> Result<Compiled, CompileError> {
    let t = Instant::now();
    let g = ground(game, limits)?;
    let demand = g.demand.clone();
    let net = from_ground(&g)?;
    drop(g);
    let mut report =
        vec![StageReport { stage: "ground+build".into(), seconds: t.elapsed().as_secs_f64(), counts: net.counts() }];
    let (mut net, mut goal_net) = passes::run(net, passes, &mut |stage, seconds, counts| {
        report.push(StageReport { stage: stage.to_string(), seconds, counts: counts.clone() })
    });
    net.canonical_order();
    if let Some(g) = &mut goal_net {
        g.canonical_order();
    }
    Ok(Compiled { net, goal_net, report, demand })
}
