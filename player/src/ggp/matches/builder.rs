//! The background builder: the machines of a match built one after
//! another (prover, reasoner race, propnet, JIT), analysed, validated by a
//! duel, and handed over to the match thread.

use super::*;

/// Where no propnet builds: the prover or the top-down reasoner, whichever
/// makes more state changes a second on a sample of random play (the same
/// seed on both, a second each at most, by `deadline`). Rules written for a
/// top-down prover are where networks fail, and there the top-down reasoner
/// can be the faster (chess as written: perft to depth 3 in 6.5 s against
/// 10.1 s). Hands over a brain on it when it is at least a fifth faster.
fn choose_reasoner(
    game: &Arc<Game>,
    strategy: &Strategy,
    seed: u64,
    shared: &Shared,
    deadline: Instant,
    out: &Sender<Built>,
) {
    let stop = Deadline::at(deadline).with_cancel(Some(shared.cancel.clone()));
    let prover = Prover::with_limits(game.clone(), shared.budget.prover_facts, stop.clone());
    let topdown = propel_runtime::topdown::TopDownMachine::new(game.clone());
    let (mut prover, topdown) = match (prover, topdown) {
        (Ok(p), Ok(t)) => (p, t),
        (_, Err(e)) | (Err(e), _) => {
            warn!("staying on the prover (no top-down reasoner to compare: {e})");
            return;
        }
    };
    let slice = Duration::from_secs(1);
    let p = sample_rate(&mut prover, seed, slice, &stop);
    let t = sample_rate(&mut topdown.clone(), seed, slice, &stop);
    let rate = |r: Option<f64>| r.map_or_else(|| "failed".to_string(), |r| format!("{r:.0} states/s"));
    let faster = matches!((p, t), (Some(p), Some(t)) if t > 1.2 * p);
    if !faster {
        info!("plan: no propnet; search on the prover ({}; top-down reasoner {})", rate(p), rate(t));
        return;
    }
    let brains = MachineBrain::new("topdown", topdown.clone(), strategy, seed)
        .and_then(|b| Ok((b, MachineBrain::new("topdown", topdown, &Strategy::Legal, seed)?)));
    match brains {
        Ok((b, twin)) => {
            info!("plan: no propnet; search on the top-down reasoner ({}; prover {})", rate(t), rate(p));
            let _ = out.send(Built::Brain(Box::new(b), Some(Box::new(twin))));
        }
        Err(e) => warn!("staying on the prover: {e:#}"),
    }
}

/// State changes a second of random play on `m` from the initial state
/// (games restarted as they end) for `slice` at most; `None` when a step
/// fails or `stop` passes first.
fn sample_rate<M: propel_runtime::StateMachine>(m: &mut M, seed: u64, slice: Duration, stop: &Deadline) -> Option<f64> {
    let t = Instant::now();
    let mut rng = Rng::new(seed);
    let roles = m.roles().len();
    let (mut moves, mut joint) = (Vec::new(), Vec::with_capacity(roles));
    let mut steps = 0u64;
    let mut s = m.initial_state().ok()?;
    while t.elapsed() < slice {
        if stop.passed() {
            return None;
        }
        if m.is_terminal(&s).ok()? {
            s = m.initial_state().ok()?;
            continue;
        }
        joint.clear();
        for r in 0..roles {
            m.legal_moves(&s, r, &mut moves).ok()?;
            joint.push(*moves.get(rng.below(moves.len().max(1)))?);
        }
        s = m.next_state(&s, &joint).ok()?;
        steps += 1;
    }
    Some(steps as f64 / t.elapsed().as_secs_f64())
}

/// Hands over a brain searching on the propnet with its lookups answered
/// by a prover of its own (built by `deadline`). No analysis: its random
/// games run on the network, which cannot end a game without its terminal
/// logic, and one step at a time through the prover they would take the
/// start clock for a handful of games.
fn search_with_lookups(
    prepared: &propel_runtime::build::Prepared,
    game: &Arc<Game>,
    strategy: &Strategy,
    seed: u64,
    shared: &Shared,
    deadline: Instant,
    out: &Sender<Built>,
) {
    let what = prepared.lookups().describe();
    let stop = Deadline::at(deadline).with_cancel(Some(shared.cancel.clone()));
    let machine = Prover::with_limits(game.clone(), shared.budget.prover_facts, stop)
        .and_then(|p| prepared.lookup_machine(p))
        .map_err(anyhow::Error::from);
    let brains = machine.and_then(|m| {
        let twin = MachineBrain::new("propnet+lookups", m.clone(), &Strategy::Legal, seed)?;
        Ok((MachineBrain::new("propnet+lookups", m, strategy, seed)?, twin))
    });
    match brains {
        Ok((b, twin)) => {
            match prepared.lookups().questions {
                true => info!(
                    "plan: search on the propnet, its questions of the state ({}) answered top-down, rollouts one at a time",
                    prepared.asked().join(", ")
                ),
                false => info!("plan: search on the propnet, {what} answered by lookups on the rules, rollouts one at a time"),
            }
            let _ = out.send(Built::Brain(Box::new(b), Some(Box::new(twin))));
        }
        Err(e) => warn!("no propnet with lookups, staying on the prover: {e:#}"),
    }
}

/// Builds the faster machines one after the other and sends a brain for
/// each (at the initial state; the match replays the moves), within the
/// match's budget and by the end of the start clock (the build flag,
/// raised then, stops grounding, the analysis and code generation).
pub(super) fn spawn_builder(
    cfg: Arc<PlayerConfig>,
    strategy: Strategy,
    seed: u64,
    game: Arc<Game>,
    shared: Arc<Shared>,
    out: Sender<Built>,
) -> Result<()> {
    let span = tracing::Span::current();
    let alive = shared.life.enter();
    std::thread::Builder::new().name(thread_name("b", &shared.id)).spawn(move || {
        let _alive = alive;
        // Locals go before `_alive` (see `spawn_fallback`).
        let (cfg, game, out) = (cfg, game, out);
        let mut strategy = strategy;
        let mut held = BuildMemory { shared: &shared, kept: 0 };
        let _enter = span.enter();
        let wants = |k: &MachineKind| cfg.machines.contains(k);
        if !wants(&MachineKind::Propnet) && !wants(&MachineKind::Jit) {
            return;
        }
        let budget = &shared.budget;
        let flag = shared.build_cancel.clone();
        // Relaxed: see `Shared::cancel`.
        let stopped = || flag.load(Ordering::Relaxed);
        let deadline = shared.build_deadline;
        let mut opts = cfg.build.clone();
        opts.limits.max_atoms = opts.limits.max_atoms.min(budget.max_atoms);
        opts.limits.max_rules = opts.limits.max_rules.min(budget.max_rules);
        opts.limits.time = opts.limits.time.min(deadline.saturating_duration_since(Instant::now()));
        opts.limits.cancel = Some(flag.clone());
        opts.codegen.cancel = Cancel(Some(flag.clone()));
        // A goal or terminal test over the budget is left to lookups on
        // the rules (`search_with_lookups`).
        opts.lookups = true;
        let t = Instant::now();
        let prepared = match prepare(&game, &opts) {
            Ok(p) => p,
            Err(e) => {
                if stopped() {
                    warn!("no propnet, staying on the prover: {e} (the build was stopped: abort, the start clock or memory)");
                } else {
                    warn!("no propnet: {e}");
                    choose_reasoner(&game, &strategy, seed, &shared, deadline, &out);
                }
                return;
            }
        };
        for r in prepared.report() {
            debug!("{}: {:.3} s, {}", r.stage, r.seconds, r.counts);
        }
        info!("propnet built in {:.2} s", t.elapsed().as_secs_f64());
        let edges = prepared.net().counts().edges as u64;
        held.kept = (edges * crate::ggp::budget::KEPT_BYTES_PER_EDGE).min(budget.build_bytes);
        let plan = propel_runtime::plan::Plan::of(&prepared);
        info!("plan: {}", plan.to_string().replace('\n', "; "));
        let _ = out.send(Built::Plan(plan.json()));
        if prepared.lookups().any() {
            if wants(&MachineKind::Propnet) {
                search_with_lookups(&prepared, &game, &strategy, seed, &shared, deadline, &out);
            }
            return;
        }
        // The fallback thread gets the first interpreted machine.
        let mut twin = MachineBrain::new("propnet", prepared.propnet(), &Strategy::Legal, seed)
            .ok()
            .map(|b| Box::new(b) as Box<dyn Brain>);
        // Hands over an interpreted brain; false when the match has gone.
        let mut send_propnet = |strategy: &Strategy| match MachineBrain::new("propnet", prepared.propnet(), strategy, seed) {
            Ok(b) => out.send(Built::Brain(Box::new(b), twin.take())).is_ok(),
            Err(e) => {
                warn!("propnet machine: {e:#}");
                true
            }
        };
        // Search on the propnet while the analysis runs (a quarter of the
        // start clock): the prover can be a thousand times slower. The
        // analysed brain replaces this one below.
        if cfg.analysis && wants(&MachineKind::Propnet) && !send_propnet(&strategy) {
            return;
        }
        // The analysis's settings and the plain ones, until validated on
        // the machine the match will search on.
        let mut pending: Option<Pending> = None;
        let until = deadline.checked_sub(VALIDATION_RESERVE).unwrap_or(deadline);
        let stop = Deadline::at(deadline).with_cancel(Some(flag.clone()));
        if cfg.analysis && !stopped() {
            // A quarter of the start clock at most: the rest is for search.
            let budget = Duration::from_secs_f64((0.25 * deadline.saturating_duration_since(t).as_secs_f64()).clamp(0.1, 10.0));
            // Puzzles are solved factor by factor whatever `--no-factors` says
            // (a solution found that way is checked on the whole game).
            match analyse_until(prepared.net(), prepared.goal_net(), &prepared.propnet(), budget, seed, true, &stop) {
                Ok(a) => {
                    info!(
                        "analysis: {} games, mean length {:.1}, exploration {:.2}, greedy rollouts {}, {} heuristics, {} factors",
                        a.games,
                        a.avg_length,
                        a.exploration,
                        a.greedy_rollouts,
                        a.heuristics.len(),
                        a.factors.len()
                    );
                    if let Strategy::Mcts(c) = &mut strategy {
                        let mut plain = c.clone();
                        cfg.tuning.configure(c, &a, cfg.heuristics, cfg.factored);
                        cfg.tuning.configure_plain(&mut plain, &a);
                        if cfg.validation {
                            pending = Some(Pending {
                                analysed: c.clone(),
                                plain,
                                avg_length: a.avg_length,
                                simultaneous: a.simultaneous,
                            });
                        }
                    }
                    let summary = json!({
                        "games": a.games, "avg_length": a.avg_length, "branching": a.branching,
                        "simultaneous": a.simultaneous, "playouts_per_s": a.playouts_per_s,
                        "exploration": a.exploration, "greedy_rollouts": a.greedy_rollouts,
                        "expand_terminal": a.expand_terminal, "goal_bounds": a.goal_bounds,
                        "heuristics": a.heuristics.len(), "prior_visits": a.prior_visits,
                        "heuristics_used": cfg.heuristics && a.evaluator.is_some(),
                        "material": a.material_reason, "greedy_moves": a.terminating_moves,
                        "greedy_check_cost": a.greedy_check_cost, "winning_moves": a.winning.len(),
                        "capturing_moves": a.captures.len(),
                        "factors": a.factors.len(), "factored_search": cfg.factored && a.factors.len() > 1,
                        "puzzle": a.puzzle_note,
                        // What each feature's checks measured and decided.
                        "checks": {
                            "exploration": a.exploration_reason, "material": a.material_reason,
                            "greedy": a.greedy_reason, "decisive": a.decisive_reason,
                            "terminal_children": a.expand_terminal_reason,
                            "heuristics": format!("held-out R² {:?}, worth {} visits", a.heuristic_r2, a.prior_visits),
                        },
                    });
                    let _ = out.send(Built::Analysis(summary));
                    if let Some(s) = a.puzzle {
                        let _ = out.send(Built::Solution(s.moves));
                    }
                }
                Err(e) => warn!("analysis: {e}"),
            }
        }
        if wants(&MachineKind::Propnet) && !send_propnet(&strategy) {
            return;
        }
        // Where the search stays on the interpreted network: validated
        // there, and its brain sent again where the plain settings won.
        let mut on_propnet = |pending: Option<Pending>| {
            if let Some(p) = pending.filter(|_| wants(&MachineKind::Propnet)) {
                let chosen = p.validated(&prepared.propnet(), false, until, &stop, &out);
                if chosen.plain_won {
                    send_propnet(&chosen.strategy);
                }
            }
        };
        if !wants(&MachineKind::Jit) {
            on_propnet(pending);
            return;
        }
        if stopped() {
            info!("no native code: the build was stopped (abort or the start clock)");
            return;
        }
        let updates = prepared.lower_machine().updates();
        if updates > budget.max_updates {
            info!("no native code: {updates} counter updates are over the match's budget ({})", budget.max_updates);
            on_propnet(pending);
            return;
        }
        let t = Instant::now();
        match prepared.jit(&game.name) {
            Ok((m, code)) => {
                info!("JIT compiled in {:.2} s ({} functions)", t.elapsed().as_secs_f64(), code.functions);
                // The plan, from what was built (no timing): where the
                // analysis chose greedy rollouts, lanes that take wins
                // first stand in for them (unless `win-first=off` or no
                // winning moves were found); else greedy rollouts run one
                // leaf at a time on the interpreted network, which the
                // match already searches (native code one state at a time
                // gains 1.2-2.3x, docs/native.md, and is kept for lanes).
                let (greedy, win_first, safe, decisive, rave, capture, table) = match &strategy {
                    Strategy::Mcts(c) => (
                        c.greedy,
                        c.win_first.as_ref().map_or(0, |w| w.len()),
                        c.safe_first,
                        c.decisive,
                        c.rave,
                        c.capture,
                        c.capture_table.as_ref().map(|t| t.len()),
                    ),
                    _ => (false, 0, false, false, 0.0, 0.0, None),
                };
                if cfg.lanes && (!greedy || win_first > 0 || decisive) && m.has_lanes() && wants(&MachineKind::Propnet)
                {
                    let lanes = if safe { "safe-first" } else { "win-first" };
                    let policy = match (win_first, greedy) {
                        _ if decisive && safe => {
                            "decisive safe-first lanes (every move tried one ply ahead for a win; a move that leaves one taken back)".to_string()
                        }
                        _ if decisive => "decisive lanes (every move tried one ply ahead for a win)".to_string(),
                        (0, _) => "uniform lane rollouts".to_string(),
                        (n, true) => format!("{lanes} lanes instead of greedy rollouts ({n} winning moves)"),
                        (n, false) => format!("{lanes} lanes ({n} winning moves)"),
                    };
                    let rave = if rave > 0.0 { format!(", RAVE (bias {rave})") } else { String::new() };
                    let rave = match table {
                        _ if capture <= 0.0 => rave,
                        Some(n) => format!(
                            ", captures first (played with chance {capture}; {n} capturing moves in the analysis's table){rave}"
                        ),
                        None => format!(", capture-first (a capture played with chance {capture}){rave}"),
                    };
                    info!("plan: lane-parallel search, tree on the propnet, rollouts and expansions on the JIT's lanes: {policy}{rave}");
                    let mut lanes = strategy.clone();
                    if let Strategy::Mcts(c) = &mut lanes {
                        c.lanes = true;
                    }
                    let hand = Handover { until, stop: &stop, out: &out, seed };
                    hand.send("hybrid", Hybrid::new(prepared.propnet(), m), lanes, pending, twin.take());
                    return;
                }
                if wants(&MachineKind::Propnet) {
                    info!(
                        "plan: rollouts one leaf at a time on the propnet ({})",
                        if greedy { "greedy rollouts: win-first=off, or no winning moves found" } else { "no lanes" }
                    );
                    on_propnet(pending);
                    return;
                }
                let hand = Handover { until, stop: &stop, out: &out, seed };
                hand.send("jit", m, strategy.clone(), pending, twin.take());
            }
            Err(e) if stopped() => info!("no native code: {e} (abort or the start clock)"),
            Err(e) => {
                warn!("no JIT, staying on the propnet: {e}");
                on_propnet(pending);
            }
        }
    })?;
    Ok(())
}

/// The validation ends this long before the start clock, so that its
/// brain is in place for the first move.
const VALIDATION_RESERVE: Duration = Duration::from_millis(300);

/// The analysis's settings and the plain ones, to be validated on the
/// machine the match will search on (`mcts::validate`).
struct Pending {
    analysed: propel_runtime::mcts::Config,
    plain: propel_runtime::mcts::Config,
    avg_length: f64,
    simultaneous: bool,
}

/// Where and when the builder hands a validated brain over.
struct Handover<'a> {
    until: Instant,
    stop: &'a Deadline,
    out: &'a Sender<Built>,
    seed: u64,
}

impl Handover<'_> {
    /// Sends a brain called `name` on `m` searching with `strategy`, or
    /// with what validating `pending` on `m` chose (on its lanes where
    /// `strategy` has them).
    fn send<M: propel_runtime::simulate::Simulator + 'static>(
        &self,
        name: &'static str,
        m: M,
        mut strategy: Strategy,
        pending: Option<Pending>,
        twin: Option<Box<dyn Brain>>,
    ) where
        M::State: Send + Sync,
        M::Move: Send + Sync,
    {
        if let Some(p) = pending {
            let lanes = matches!(&strategy, Strategy::Mcts(c) if c.lanes);
            strategy = p.validated(&m, lanes, self.until, self.stop, self.out).strategy;
        }
        match MachineBrain::new(name, m, &strategy, self.seed) {
            Ok(b) => {
                let _ = self.out.send(Built::Brain(Box::new(b), twin));
            }
            Err(e) => warn!("{name} machine: {e:#}"),
        }
    }
}

/// What a validation chose.
struct Validated {
    strategy: Strategy,
    /// The plain settings won: a brain with the analysed ones must go.
    plain_won: bool,
}

impl Pending {
    /// Duels the analysed settings against the plain ones on `m` (with
    /// `lanes`, as the brain will search) until `until`, logs and records
    /// the verdict, and gives the strategy to search with. A duel that
    /// fails keeps the analysed settings (the analysis's checks passed).
    fn validated<M: propel_runtime::simulate::Simulator>(
        self,
        m: &M,
        lanes: bool,
        until: Instant,
        stop: &Deadline,
        out: &Sender<Built>,
    ) -> Validated
    where
        M::State: Send + Sync,
        M::Move: Send + Sync,
    {
        let Pending { mut analysed, mut plain, avg_length, simultaneous } = self;
        analysed.lanes = lanes;
        plain.lanes = lanes;
        let mut m = m.clone();
        let verdict = m
            .initial_state()
            .and_then(|root| validate(&m, &root, &analysed, &plain, Pace { avg_length, simultaneous }, until, stop));
        match verdict {
            Ok(v) => {
                info!("validation: {}", v.describe());
                let _ = out.send(Built::Validation(v.json()));
                if v.adopted {
                    Validated { strategy: Strategy::Mcts(analysed), plain_won: false }
                } else {
                    Validated { strategy: Strategy::Mcts(plain), plain_won: true }
                }
            }
            Err(e) => {
                warn!("validation: {e:#}; the analysis's settings are kept");
                Validated { strategy: Strategy::Mcts(analysed), plain_won: false }
            }
        }
    }
}
