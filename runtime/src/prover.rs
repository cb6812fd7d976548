//! The reference prover: evaluates the rules directly, bottom-up and
//! stratum by stratum, for every state it is asked about. Slow, simple,
//! and the semantic reference every faster machine is checked against.
//!
//! Facts are kept by layer: static relations are derived once, state
//! relations (those that read `true`) whenever the state changes, and move
//! relations (those that read `does`) whenever the joint move changes.

use crate::machine::{MachineError, StateMachine};
use propel_compiler::eval::{Budget, Db, EvalError, Negation, Program, Scratch, Steps};
use propel_compiler::magic::{demand_transform, with_callees, with_callers};
use propel_compiler::unfold::unfold_ground_heads;
use propel_compiler::{Deadline, Game, Layer, RelId, TermId, TermPool};
use std::sync::Arc;

/// Most facts the prover derives for one state before it gives up.
pub const MAX_FACTS_PER_STATE: usize = 20_000_000;

/// A relation derived more often than this while the initial state is
/// evaluated is computed on demand instead.
const HEAVY_DERIVATIONS: u64 = 50_000;

/// Most relations rewritten for demand before the prover settles.
const MAX_REWRITES: usize = 8;

/// While a rewrite may still follow, an attempt to build the prover stops
/// when a relation reaches this many rows (in one state).
const ATTEMPT_MAX_ROWS: usize = 250_000;

/// While a rewrite may still follow, an attempt also stops when one join
/// derives this many rows, duplicates included (mummymaze1p's
/// `direction-from`: 6.5M derivations, then computed on demand anyway;
/// a join this large would count as heavy below).
const ATTEMPT_MAX_JOIN: usize = ATTEMPT_MAX_ROWS;

/// Plies of the sample game that looks for relations heavy later on.
const SAMPLE_PLIES: usize = 10;

/// Most legal moves of a role in a state of the sample game: with more,
/// there is no sample (the hostile `scripts/hostile/million.kif`: a
/// million moves, whose texts would be written and sorted every ply).
const SAMPLE_MAX_MOVES: usize = 10_000;

/// A relation derived this often in the sample game is tried on demand.
const SAMPLE_HEAVY: u64 = 20_000;

/// The sample game of a prover that takes more join steps than this
/// (a fraction of a second) is not played: its build would take too long.
const SAMPLE_MAX_STEPS: u64 = 5_000_000;

/// Most rewrites tried on the sample game.
const MAX_SAMPLE_REWRITES: usize = 4;

/// A relation derived this often in the sample game is tried unfolded
/// into its callers (about 500 rows a state).
const SAMPLE_UNFOLD: u64 = 5_000;

/// Most unfoldings tried on the sample game.
const MAX_SAMPLE_UNFOLDS: usize = 4;

/// What the sample game cost one program: how far it got, and the join
/// steps it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SampleCost {
    plies: usize,
    steps: u64,
}

impl SampleCost {
    /// As far, and at least a tenth fewer steps: a rewrite adds demand
    /// relations and indexes, worth keeping only for a clear gain.
    fn better_than(&self, other: &SampleCost) -> bool {
        self.plies >= other.plies && self.steps * 10 < other.steps * 9
    }
}

/// A state: the sorted ids of the terms that are `true`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProverState(Arc<[TermId]>);

impl ProverState {
    pub fn facts(&self) -> &[TermId] {
        &self.0
    }

    /// The state whose facts are `terms` (sorted and deduplicated here).
    pub(crate) fn from_terms(terms: &mut Vec<TermId>) -> ProverState {
        terms.sort_unstable();
        terms.dedup();
        ProverState(Arc::from(terms.as_slice()))
    }
}

#[derive(Clone)]
pub struct Prover {
    game: Arc<Game>,
    program: Program,
    pool: TermPool,
    db: Db,
    scratch: Scratch,
    budget: Budget,
    role_names: Vec<String>,
    role_terms: Vec<TermId>,
    /// Strata of each layer, in evaluation order.
    strata: [Vec<usize>; 3],
    /// Relations of each layer (cleared when that layer is recomputed).
    rels: [Vec<RelId>; 3],
    /// For each query on a state ([`Query`]), the positions in
    /// `strata[1]` of the state strata it reads, in evaluation order.
    needs: [Vec<usize>; 4],
    /// Which of `strata[1]` are evaluated for the loaded state: a state's
    /// strata are evaluated when a query first needs them, so that a
    /// search that asks only for legal moves and next states never derives
    /// what only goals read (sudoku's `victoryState`, which costs more than
    /// the rest of the state together).
    done: Vec<bool>,
    initial: ProverState,
    loaded_state: Option<ProverState>,
    loaded_joint: Option<Vec<TermId>>,
    /// Join steps it took to derive the static facts and the initial state.
    build_steps: u64,
}

/// What is asked of a loaded state; indexes [`Prover::needs`].
#[derive(Clone, Copy)]
enum Query {
    Legal = 0,
    Terminal = 1,
    Goal = 2,
    /// The state relations `next` reads (the move layer comes after).
    Next = 3,
}

const QUERIES: [Query; 4] = [Query::Legal, Query::Terminal, Query::Goal, Query::Next];

fn layer_index(l: Layer) -> usize {
    match l {
        Layer::Static => 0,
        Layer::State => 1,
        Layer::Move => 2,
    }
}

impl Prover {
    /// Builds the prover and derives the static facts and the initial state.
    pub fn new(game: Arc<Game>) -> Result<Prover, MachineError> {
        Prover::with_limits(game, MAX_FACTS_PER_STATE, Deadline::none())
    }

    /// As [`Prover::with_limits`], and at most `max_steps` join steps in
    /// all to build it (every rewrite included): a limit that stops the
    /// build at the same point however busy the machine is, so that
    /// `propel check` gives the same verdict under load. The limit is
    /// lifted once the prover is built. Only the initial state is looked
    /// at: no sample of later states is played (see [`Prover::with_limits`]).
    pub fn with_work_limit(
        game: Arc<Game>,
        max_facts: usize,
        max_steps: u64,
        deadline: Deadline,
    ) -> Result<Prover, MachineError> {
        let (p, _) = Prover::build_with_rewrites(game, max_facts, Some(max_steps), deadline, Vec::new())?;
        Ok(p)
    }

    /// As [`Prover::new`], with a limit on the facts derived per state and
    /// a deadline for deriving the static facts. The deadline's cancel flag
    /// stays with the prover: raised later, it stops any evaluation.
    ///
    /// Relations written for top-down provers (always called with bound
    /// arguments) can be huge bottom-up. When one exhausts the budget, or
    /// dominates the derivations of the initial state, it is rewritten to
    /// be computed on demand ([`propel_compiler::magic`]), with the
    /// state-dependent helpers it calls, and the prover is built again.
    /// Then a short sample game (`SAMPLE_PLIES` plies, moves chosen by
    /// their text, so the same on every build) finds relations that are
    /// heavy later in the game (chess's `blocks_rook_threat`, computed in
    /// every state though only needed in check): each is rewritten in
    /// turn, and the rewrite kept when the sample takes fewer join steps.
    /// Last, relations derived in full every state are tried unfolded
    /// into their callers, kept on the same test.
    pub fn with_limits(game: Arc<Game>, max_facts: usize, deadline: Deadline) -> Result<Prover, MachineError> {
        let (mut p, demand) = Prover::build_with_rewrites(game.clone(), max_facts, None, deadline.clone(), Vec::new())?;
        let Some(mut best) = p.sample(SAMPLE_MAX_STEPS) else { return Ok(p) };
        let mut demand = demand;
        let mut tried = 0;
        for name in p.heavy_in_sample() {
            if tried >= MAX_SAMPLE_REWRITES || demand.len() >= MAX_REWRITES {
                break;
            }
            let Some(r) = game.relation_by_name(propel_compiler::project::base_name(&name)) else { continue };
            if demand.contains(&r) {
                continue;
            }
            let mut more = demand.clone();
            more.push(r);
            let Some(rw) = demand_transform(&game, &with_callers(&game, &with_callees(&game, &more))) else {
                continue;
            };
            if !rw.relations.contains(&r) {
                continue;
            }
            tried += 1;
            if let Some((q, cost)) = p.rebuilt_if_better(rw.game, max_facts, &deadline, best, &name, "on demand") {
                p = q;
                best = cost;
                demand = more;
            }
        }
        // Then relations derived in full every state are asked inside
        // their callers instead ([`propel_compiler::unfold::unfold_calls`]),
        // each kept when the sample takes fewer steps.
        let mut tried = 0;
        for name in p.derived_in_sample(SAMPLE_UNFOLD) {
            if tried >= MAX_SAMPLE_UNFOLDS {
                break;
            }
            let Some(r) = p.game.relation_by_name(&name) else { continue };
            let Some(g) = propel_compiler::unfold::unfold_calls(&p.game, r) else { continue };
            tried += 1;
            if let Some((q, cost)) = p.rebuilt_if_better(g, max_facts, &deadline, best, &name, "unfolded") {
                p = q;
                best = cost;
            }
        }
        Ok(p)
    }

    /// The prover built from `game` (this one's rules rewritten for
    /// `relation`, as `what` says), with its sample cost, when its sample
    /// game takes at least 10% fewer join steps than `best`.
    fn rebuilt_if_better(
        &self,
        game: Game,
        max_facts: usize,
        deadline: &Deadline,
        best: SampleCost,
        relation: &str,
        what: &str,
    ) -> Option<(Prover, SampleCost)> {
        let mut used = 0;
        let mut q =
            Prover::build(Arc::new(game), max_facts, usize::MAX, Steps::unlimited(), deadline.clone(), &mut used)
                .ok()?;
        // A rewrite kept must take 10% fewer steps: stop it there.
        let cost = q.sample(best.steps / 10 * 9)?;
        tracing::debug!(relation, what, before = ?best, after = ?cost, "prover: rewrite tried in the sample game");
        if !cost.better_than(&best) {
            return None;
        }
        q.build_steps = self.build_steps + used;
        Some((q, cost))
    }

    /// Builds the prover for `game`, rewriting relations for demand while
    /// the initial state shows heavy ones; also returns the relations
    /// rewritten (to which `demand` is the start).
    fn build_with_rewrites(
        game: Arc<Game>,
        max_facts: usize,
        max_steps: Option<u64>,
        deadline: Deadline,
        mut demand: Vec<RelId>,
    ) -> Result<(Prover, Vec<RelId>), MachineError> {
        let mut current = game.clone();
        let mut steps_left = max_steps;
        let mut built: Option<(Prover, Vec<RelId>)> = None;
        let mut total = 0;
        let mut last_chance = false;
        loop {
            let steps = steps_left.map_or(Steps::unlimited(), Steps::limited);
            let mut used = 0;
            // While a rewrite may still follow, a relation that reaches
            // ATTEMPT_MAX_ROWS rows stops the attempt (laikLee_hex's path
            // lists: 250k rows instead of 5M facts of deep terms, 1.6 µs
            // per join step).
            let max_rows = if last_chance { usize::MAX } else { ATTEMPT_MAX_ROWS };
            let attempt = Prover::build(current.clone(), max_facts, max_rows, steps, deadline.clone(), &mut used);
            let culprits = match &attempt {
                Ok(p) => p.heavy_relations(),
                Err(MachineError::Eval(
                    EvalError::TooManyFacts { relation, .. }
                    | EvalError::TooManyRows { relation, .. }
                    | EvalError::TooManyDerivations { relation, .. }
                    | EvalError::Timeout { relation, .. }
                    | EvalError::TooMuchWork { relation, .. },
                )) => {
                    vec![relation.clone()]
                }
                Err(_) => Vec::new(),
            };
            steps_left = steps_left.map(|s| s.saturating_sub(used));
            total += used;
            let attempt = attempt.map(|mut p| {
                p.build_steps = total;
                (p, demand.clone())
            });
            // A rewrite for speed that fails leaves the last prover that
            // was built.
            let attempt = match (attempt, built.take()) {
                (Err(_), Some((mut p, d))) => {
                    p.build_steps = total;
                    return Ok((p, d));
                }
                (a, _) => a,
            };
            if steps_left == Some(0) || demand.len() >= MAX_REWRITES {
                return attempt;
            }
            // Rewrite the heaviest relation that can be rewritten. An
            // adorned relation `r@bf` stands for `r`; magic relations
            // cannot be helped further.
            let mut progressed = false;
            for name in culprits.iter().filter(|n| !n.starts_with(propel_compiler::magic::PREFIX)) {
                let base = name.split('@').next().unwrap_or(name);
                let Some(r) = game.relation_by_name(base) else { continue };
                if demand.contains(&r) {
                    continue;
                }
                demand.push(r);
                match demand_transform(&game, &with_callers(&game, &with_callees(&game, &demand))) {
                    Some(rw) if rw.relations.contains(&r) => {
                        tracing::debug!(relation = game.rel_name(r), "computing on demand");
                        current = Arc::new(rw.game);
                        progressed = true;
                        break;
                    }
                    _ => {
                        demand.pop();
                    }
                }
            }
            if !progressed {
                // Nothing to rewrite: once more without the row limit
                // (unless it was not what stopped the attempt).
                let rows_stopped = matches!(
                    &attempt,
                    Err(MachineError::Eval(
                        EvalError::TooManyRows { .. } | EvalError::TooManyDerivations { limit: ATTEMPT_MAX_JOIN, .. }
                    ))
                );
                if !rows_stopped || last_chance {
                    return attempt;
                }
                last_chance = true;
                continue;
            }
            built = attempt.ok();
        }
    }

    /// The relations derived most often while the initial state was
    /// evaluated, heaviest first, if heavy enough to be worth computing on
    /// demand.
    fn heavy_relations(&self) -> Vec<String> {
        let mut v: Vec<(RelId, u64)> = self.scratch.counts().filter(|&(_, n)| n > HEAVY_DERIVATIONS).collect();
        v.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
        v.into_iter().map(|(r, _)| self.program.relation_name(r).to_string()).collect()
    }

    /// Plays the sample game from the initial state: at most
    /// [`SAMPLE_PLIES`] plies, each role playing the legal move whose text
    /// comes at a position fixed by the ply among its moves sorted by
    /// text (so the game is the same whatever the rules were rewritten
    /// into). Counts derivations per relation. None when a state could not
    /// be evaluated (a limit ran out, `max_steps` join steps included).
    fn sample(&mut self, max_steps: u64) -> Option<SampleCost> {
        self.scratch.reset_counts();
        self.budget.steps = Steps::limited(max_steps);
        let cost = self.play_sample();
        self.budget.steps = Steps::unlimited();
        cost
    }

    fn play_sample(&mut self) -> Option<SampleCost> {
        let before = self.budget.steps.done;
        let mut s = self.initial.clone();
        let mut plies = 0;
        let mut moves = Vec::new();
        while plies < SAMPLE_PLIES {
            if self.is_terminal(&s).ok()? {
                break;
            }
            let mut joint = Vec::with_capacity(self.role_terms.len());
            for r in 0..self.role_terms.len() {
                self.legal_moves(&s, r, &mut moves).ok()?;
                // Moves are chosen by their text, which costs more than
                // the rules' evaluation when there are very many: no sample.
                if moves.len() > SAMPLE_MAX_MOVES {
                    return None;
                }
                let mut named: Vec<(String, TermId)> = moves.iter().map(|&m| (self.move_kif(m), m)).collect();
                if named.is_empty() {
                    return Some(SampleCost { plies, steps: self.budget.steps.done - before });
                }
                let at = (plies * 7 + 3 * r + 1) % named.len();
                joint.push(named.select_nth_unstable(at).1 .1);
            }
            s = self.next_state(&s, &joint).ok()?;
            plies += 1;
        }
        self.is_terminal(&s).ok()?;
        Some(SampleCost { plies, steps: self.budget.steps.done - before })
    }

    /// The relations derived at least [`SAMPLE_HEAVY`] times in the
    /// sample game, heaviest first (by their names in the program).
    fn heavy_in_sample(&self) -> Vec<String> {
        self.derived_in_sample(SAMPLE_HEAVY)
    }

    /// The relations derived at least `min` times in the sample game,
    /// most first.
    fn derived_in_sample(&self, min: u64) -> Vec<String> {
        let mut v: Vec<(RelId, u64)> = self.scratch.counts().filter(|&(_, n)| n >= min).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.into_iter()
            .map(|(r, _)| self.program.relation_name(r).to_string())
            .filter(|n| !n.starts_with(propel_compiler::magic::PREFIX))
            .collect()
    }

    /// One build; `used` gets the join steps it took, also when it fails.
    fn build(
        game: Arc<Game>,
        max_facts: usize,
        max_rows: usize,
        steps: Steps,
        deadline: Deadline,
        used: &mut u64,
    ) -> Result<Prover, MachineError> {
        // Ground-head clauses stop at their first match: unfolding lets
        // that reach into the state relations they call.
        let game = unfold_ground_heads(&game).map_or(game, Arc::new);
        let mut pool = TermPool::new();
        let relations =
            game.relations.iter().map(|r| (game.symbols.name(r.name).to_string(), r.arity, r.layer)).collect();
        let (program, db) = Program::new(relations, &game.clauses, &game.strata);
        let needed = game.needed_relations();
        let mut strata: [Vec<usize>; 3] = Default::default();
        for (i, st) in program.strata().iter().enumerate() {
            if st.rels.iter().any(|r| needed[r.index()]) {
                strata[layer_index(st.layer)].push(i);
            }
        }
        let mut rels: [Vec<RelId>; 3] = Default::default();
        for (i, r) in game.relations.iter().enumerate() {
            rels[layer_index(r.layer)].push(RelId(i as u32));
        }
        let needs = QUERIES.map(|q| {
            let root = match q {
                Query::Legal => RelId::LEGAL,
                Query::Terminal => RelId::TERMINAL,
                Query::Goal => RelId::GOAL,
                Query::Next => RelId::NEXT,
            };
            let by = game.needed_by(&[root]);
            let reads = |si: usize| program.strata()[si].rels.iter().any(|r| by[r.index()]);
            (0..strata[1].len()).filter(|&k| reads(strata[1][k])).collect::<Vec<usize>>()
        });
        let done = vec![false; strata[1].len()];
        let role_names = game.role_names();
        let role_terms = game.roles.iter().map(|&r| pool.constant(r)).collect();
        let mut p = Prover {
            program,
            pool,
            db,
            scratch: Scratch::default(),
            budget: Budget::new(max_facts, deadline)
                .with_steps(steps)
                .with_max_rows(max_rows)
                .with_max_join(if max_rows == usize::MAX { usize::MAX } else { ATTEMPT_MAX_JOIN }),
            build_steps: 0,
            role_names,
            role_terms,
            strata,
            rels,
            needs,
            done,
            initial: ProverState(Arc::from(Vec::new())),
            loaded_state: None,
            loaded_joint: None,
            game,
        };
        let derived = p.derive_initial();
        *used = p.budget.steps.done;
        derived?;
        p.budget.deadline = p.budget.deadline.cancel_only();
        p.build_steps = p.budget.steps.done;
        p.budget.steps = Steps::unlimited();
        p.budget.max_rows = usize::MAX;
        p.budget.max_join = usize::MAX;
        Ok(p)
    }

    /// The static facts, the initial state, and that state's facts.
    fn derive_initial(&mut self) -> Result<(), MachineError> {
        self.eval_layer(0)?;
        self.initial = self.collect(RelId::INIT);
        // Evaluate the initial state once (under the same deadline),
        // counting derivations per relation.
        self.scratch.reset_counts();
        let initial = self.initial.clone();
        self.load_state(&initial)?;
        for q in QUERIES {
            self.ensure(q)?;
        }
        Ok(())
    }

    pub fn game(&self) -> &Game {
        &self.game
    }

    /// The term written `text` in canonical KIF (as [`StateMachine::move_kif`]
    /// and [`StateMachine::state_kif`] write terms; symbols are read in
    /// lower case). An error when the text is not one term or names a
    /// symbol the game does not have (no state or move of the game holds it).
    pub fn term_from_kif(&mut self, text: &str) -> Result<TermId, MachineError> {
        self.pool
            .parse_kif(&self.game.symbols, text)
            .map_err(|why| MachineError::NotATerm { text: text.to_string(), why })
    }

    /// The state whose facts are `facts` (each in canonical KIF, as
    /// [`StateMachine::state_kif`] lists them): `state_kif` read back.
    pub fn state_from_kif(&mut self, facts: &[String]) -> Result<ProverState, MachineError> {
        let mut v = facts.iter().map(|f| self.term_from_kif(f)).collect::<Result<Vec<_>, _>>()?;
        v.sort_unstable();
        v.dedup();
        Ok(ProverState(Arc::from(v)))
    }

    /// Join steps it took to build this prover (every rewrite tried): the
    /// static facts and the initial state.
    pub fn build_steps(&self) -> u64 {
        self.build_steps
    }

    fn eval_layer(&mut self, layer: usize) -> Result<(), MachineError> {
        self.budget.reset();
        for k in 0..self.strata[layer].len() {
            self.eval_stratum(self.strata[layer][k])?;
        }
        Ok(())
    }

    fn eval_stratum(&mut self, si: usize) -> Result<(), EvalError> {
        self.program.eval_stratum(
            si,
            &mut self.db,
            &mut self.pool,
            Negation::Check,
            &mut self.budget,
            &mut self.scratch,
        )
    }

    /// The sorted, distinct first arguments of a unary relation.
    fn collect(&self, rel: RelId) -> ProverState {
        let mut v: Vec<TermId> = self.db.rel(rel).rows().map(|r| r[0]).collect();
        v.sort_unstable();
        v.dedup();
        ProverState(Arc::from(v))
    }

    fn clear_layer(&mut self, layer: usize) {
        for &r in &self.rels[layer] {
            self.db.rel_mut(r).clear();
        }
    }

    fn load_state(&mut self, s: &ProverState) -> Result<(), MachineError> {
        if self.loaded_state.as_ref() == Some(s) {
            return Ok(());
        }
        self.loaded_state = None;
        self.loaded_joint = None;
        self.clear_layer(1);
        self.clear_layer(2);
        let t = self.db.rel_mut(RelId::TRUE);
        for &f in s.facts() {
            t.insert(&[f], &self.pool);
        }
        self.budget.reset();
        self.done.iter_mut().for_each(|d| *d = false);
        self.loaded_state = Some(s.clone());
        Ok(())
    }

    /// Evaluates the state strata `q` reads that are not evaluated yet
    /// (each reads only strata before it in `q`'s list: the list is closed
    /// under dependence and in evaluation order). A failure unloads the
    /// state, whose relations may then be incomplete.
    fn ensure(&mut self, q: Query) -> Result<(), MachineError> {
        for k in 0..self.needs[q as usize].len() {
            let pos = self.needs[q as usize][k];
            if self.done[pos] {
                continue;
            }
            if let Err(e) = self.eval_stratum(self.strata[1][pos]) {
                self.loaded_state = None;
                self.loaded_joint = None;
                return Err(e.into());
            }
            self.done[pos] = true;
        }
        Ok(())
    }

    fn load_query(&mut self, s: &ProverState, q: Query) -> Result<(), MachineError> {
        self.load_state(s)?;
        self.ensure(q)
    }

    fn load_joint(&mut self, s: &ProverState, joint: &[TermId]) -> Result<(), MachineError> {
        self.load_query(s, Query::Next)?;
        if self.loaded_joint.as_deref() == Some(joint) {
            return Ok(());
        }
        if joint.len() != self.role_terms.len() {
            return Err(MachineError::BadJoint { roles: self.role_terms.len() });
        }
        self.loaded_joint = None;
        self.clear_layer(2);
        let does = self.db.rel_mut(RelId::DOES);
        for (&r, &m) in self.role_terms.iter().zip(joint) {
            does.insert(&[r, m], &self.pool);
        }
        self.eval_layer(2)?;
        self.loaded_joint = Some(joint.to_vec());
        Ok(())
    }
}

impl StateMachine for Prover {
    type State = ProverState;
    type Move = TermId;

    fn roles(&self) -> &[String] {
        &self.role_names
    }

    fn initial_state(&mut self) -> Result<ProverState, MachineError> {
        Ok(self.initial.clone())
    }

    fn is_terminal(&mut self, s: &ProverState) -> Result<bool, MachineError> {
        self.load_query(s, Query::Terminal)?;
        Ok(!self.db.rel(RelId::TERMINAL).is_empty())
    }

    fn legal_moves(&mut self, s: &ProverState, role: usize, out: &mut Vec<TermId>) -> Result<(), MachineError> {
        self.load_query(s, Query::Legal)?;
        out.clear();
        let r = self.role_terms[role];
        out.extend(self.db.rel(RelId::LEGAL).rows().filter(|row| row[0] == r).map(|row| row[1]));
        Ok(())
    }

    fn next_state(&mut self, s: &ProverState, joint: &[TermId]) -> Result<ProverState, MachineError> {
        self.load_joint(s, joint)?;
        Ok(self.collect(RelId::NEXT))
    }

    fn goal_values(&mut self, s: &ProverState, role: usize, out: &mut Vec<u8>) -> Result<(), MachineError> {
        self.load_query(s, Query::Goal)?;
        out.clear();
        let r = self.role_terms[role];
        for row in self.db.rel(RelId::GOAL).rows().filter(|row| row[0] == r) {
            let text = self.pool.to_kif(row[1], &self.game.symbols);
            match text.parse::<u8>() {
                Ok(v) if v <= 100 => out.push(v),
                _ => return Err(MachineError::BadGoal { role: self.role_names[role].clone(), value: text }),
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(())
    }

    fn state_kif(&mut self, s: &ProverState) -> Vec<String> {
        let mut v: Vec<String> = s.facts().iter().map(|&t| self.pool.to_kif(t, &self.game.symbols)).collect();
        v.sort();
        v
    }

    fn move_kif(&self, m: TermId) -> String {
        self.pool.to_kif(m, &self.game.symbols)
    }
}

#[cfg(test)]
mod tests;
