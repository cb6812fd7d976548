//! Backing values up a selection path: new children, visit counts, sums,
//! RAVE samples and value normalisation.

use super::*;

impl<M: Simulator> Graph<M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    /// Heuristic initialisation: a move with no value backed up yet counts
    /// the evaluator's prior visits at its child's predicted value (once:
    /// not again for another reply of the other roles, nor for a recycled
    /// child).
    pub(super) fn initialise(&mut self, m: &M, parent: NodeRef, moves: &[u16], child: NodeRef) {
        let Some((prior, prior_visits)) = self.predict(m, parent, child) else { return };
        let Some(n) = self.get_mut(parent) else { return };
        for (role, &v) in prior.iter().enumerate() {
            if !v.is_finite() || n.moves(role) < 2 {
                continue;
            }
            let chooser = n.single == Some(role as u8);
            if let Some(e) = n.edge_mut(role, moves[role] as usize).filter(|e| e.backed == 0) {
                e.visits += prior_visits;
                e.backed += prior_visits;
                e.sum += prior_visits as f64 * v;
                if chooser {
                    n.prior += prior_visits;
                }
            }
        }
    }

    /// Puts the child that the last step of `path` (a [`Leaf::Expand`])
    /// leads to into the graph, as computed elsewhere: its state, and
    /// either its goals (0..1, terminal) or each role's legal moves (by
    /// index, ascending, as [`Simulator::move_index`] numbers them). Does
    /// nothing when the parent was recycled since.
    pub fn attach(
        &mut self,
        m: &mut M,
        path: &[Step],
        state: M::State,
        outcome: Outcome<'_>,
    ) -> Result<(), MachineError> {
        let Some(step) = path.last() else { return Ok(()) };
        let (parent, moves) = (step.node, &step.moves);
        if self.get(parent).is_none() {
            return Ok(());
        }
        let hash = m.state_hash(&state);
        let (child, new) = match self.find(hash, &state) {
            Some(c) => (c, false),
            None => (self.make(state, hash), true),
        };
        if new {
            let n = &mut self.nodes[child.idx as usize];
            match outcome {
                Outcome::Terminal(goals) => {
                    n.terminal = true;
                    n.solved = true;
                    n.value.extend(goals.iter().copied());
                }
                Outcome::Legal(legal) => {
                    // Into vectors kept from one expansion to the next.
                    let moves = &mut self.legal;
                    moves.resize_with(legal.len(), Vec::new);
                    for (role, (ids, mv)) in legal.iter().zip(moves.iter_mut()).enumerate() {
                        mv.clear();
                        mv.extend(ids.iter().filter_map(|&i| m.move_from_index(i)));
                        m.restrict_moves(role, mv);
                    }
                    // Left unexpanded (the machine expands it when it is
                    // reached) if a role has none, or too many to index.
                    if moves.len() == self.roles
                        && moves.iter().all(|mv| !mv.is_empty() && mv.len() <= u16::MAX as usize)
                    {
                        n.set_moves(moves);
                    }
                }
            }
        }
        if new {
            self.evaluate_share(m, child);
        }
        // Making the child may have recycled the parent (a full pool).
        if self.get(parent).is_none() {
            return Ok(());
        }
        self.link(parent, moves, child);
        if new {
            self.initialise(m, parent, moves, child);
            let c = &self.nodes[child.idx as usize];
            if c.expanded {
                if let Some(state) = c.state.clone() {
                    self.link_terminal_children(m, child, &state)?;
                }
            }
        }
        if self.get(child).is_some_and(|c| c.solved) {
            self.update_solved(path);
        }
        Ok(())
    }

    /// Adds a rollout's `value` (per role, 0..1) to every move on `path`;
    /// steps whose node was recycled since are skipped.
    pub fn backprop(&mut self, path: &[Step], value: &[f64]) {
        self.add_values(path, value, self.material_backup_on());
    }

    /// [`Graph::backprop`], with material backups where `adjust`.
    pub(super) fn add_values(&mut self, path: &[Step], value: &[f64], adjust: bool) {
        if self.roles == 2 && value.len() == 2 && (value[0] + value[1] - 1.0).abs() > 1e-6 {
            self.fixed_sum = false;
        }
        let mut v: SmallVec<[f64; 4]> = SmallVec::from_slice(value);
        let lift = self.settle && self.roles == 2 && v.len() == 2 && self.fixed_sum;
        // The material of the path's nodes, then of the node the last step
        // leads to.
        let mut mats: SmallVec<[(f32, f32); 32]> = SmallVec::new();
        if adjust && v.len() == 2 {
            mats.extend(path.iter().map(|s| self.get(s.node).map_or((f32::NAN, f32::NAN), |n| n.mat)));
            let leaf = path.last().and_then(|s| self.get(s.node).and_then(|n| self.child(n, &s.moves)));
            mats.push(leaf.and_then(|c| self.get(c)).map_or((f32::NAN, f32::NAN), |n| n.mat));
        }
        for (i, s) in path.iter().enumerate().rev() {
            if !mats.is_empty() {
                if let Some(h) = exchange_value(&mats, i + 1) {
                    v[0] = Self::shift(v[0], h);
                    v[1] = Self::shift(v[1], 1.0 - h);
                }
            }
            let Some(n) = self.get_mut(s.node) else { continue };
            n.each_role_choice(&s.moves, |role, e| {
                e.sum += v.get(role).copied().unwrap_or(0.0);
                e.backed += 1;
            });
            // No selection adds a visit to a forced move: the visit comes
            // with its value.
            n.each_forced(|role, e| {
                e.sum += v.get(role).copied().unwrap_or(0.0);
                e.backed += 1;
                e.visits += 1;
            });
            // The chooser here has the best solved child's value whatever
            // this path's move was worth: the node above gets no less.
            if lift && n.floor.1 != NO_PROOF {
                if let Some(c) = n.single.map(usize::from).filter(|&c| c < 2) {
                    if v[c] < n.floor.0 {
                        v[c] = n.floor.0;
                        v[1 - c] = 1.0 - n.floor.0;
                    }
                }
            }
        }
        if self.minimax_on() {
            for s in path.iter().rev() {
                self.back_up_share(s.node);
            }
        }
        if self.normalize && self.roles == 2 && self.fixed_sum {
            for w in path.windows(2).rev() {
                self.normalize_edge(&w[0], w[1].node);
            }
        }
    }

    /// Periodic value normalisation (Sancho's "node score normalisation"):
    /// every 100 visits of a node with at least 500, the value its parent's
    /// move holds is recomputed from the node's moves, each weighted by the
    /// visits UCB would give it if the moves' current means never changed
    /// (the best move keeps its visits; a move whose mean fell since its
    /// visits were spent counts for less). A mean over every visit keeps
    /// the weight of moves tried while they looked good; this follows the
    /// best move sooner, as minimax would. Two roles whose goals add up
    /// to the maximum only: the parent's chooser values the node as the
    /// node's chooser's complement (or as it, when both are one role).
    pub fn set_normalize(&mut self, on: bool) {
        self.normalize = on;
    }

    /// How many times a value was normalised ([`Graph::set_normalize`]).
    pub fn normalizations(&self) -> u64 {
        self.normalized
    }

    /// [`Graph::set_normalize`]: renormalises `child`'s value held by the
    /// move of `step`'s chooser that leads to it, when it is due.
    pub(super) fn normalize_edge(&mut self, step: &Step, child: NodeRef) {
        const WARMUP: u32 = 500;
        const PERIOD: u32 = 100;
        const MIN_VISITS: u32 = 20;
        let Some(x) = self.get(child) else { return };
        if x.solved || x.visits < WARMUP || x.visits < x.normalized_at + PERIOD {
            return;
        }
        let Some(c) = x.single.map(usize::from).filter(|&c| x.moves(c) > 1) else { return };
        let edges = x.role(c);
        let mean = |e: &Edge<M::Move>| e.sum / e.backed as f64;
        let Some(pivot) =
            edges.iter().filter(|e| !e.lost && e.backed >= MIN_VISITS).max_by(|a, b| mean(a).total_cmp(&mean(b)))
        else {
            return;
        };
        let ln_n = ln(x.visits as f64);
        let top = mean(pivot) + self.exploration * (ln_n / pivot.backed as f64).sqrt();
        let (mut total, mut weight) = (0.0, 0.0);
        for e in edges.iter().filter(|e| !e.lost && e.backed > 0) {
            let m = mean(e);
            let gap = top - m;
            let w = if e.backed >= MIN_VISITS && gap > 1e-9 {
                self.exploration * self.exploration * ln_n / (gap * gap)
            } else {
                e.backed as f64
            };
            total += w * m;
            weight += w;
        }
        if weight <= 0.0 {
            return;
        }
        let value = total / weight;
        let xi = child.idx as usize;
        self.nodes[xi].normalized_at = self.nodes[xi].visits;
        let Some(parent) = self.get_mut(step.node) else { return };
        let Some(p) = parent.single.map(usize::from) else { return };
        let v = if p == c { value } else { 1.0 - value };
        if let Some(e) = step.moves.get(p).and_then(|&mv| parent.edge_mut(p, mv as usize)) {
            if e.backed > 0 {
                e.sum = v * e.backed as f64;
                self.normalized += 1;
            }
        }
    }

    /// [`Graph::backprop`], and with RAVE on ([`Graph::set_rave`]) the
    /// AMAF statistics: at each node of `path`, every move of a role with
    /// a choice that the role played there or below, in the path or in
    /// the rollout (`rollout`: one bit per move index,
    /// [`Simulator::move_index`]), gets the role's value.
    pub fn backprop_moves(&mut self, m: &M, path: &[Step], value: &[f64], rollout: &[u64]) {
        self.backprop(path, value);
        if self.rave == 0.0 {
            return;
        }
        let mut seen = std::mem::take(&mut self.amaf_seen);
        seen.clear();
        seen.extend_from_slice(rollout);
        for s in path.iter().rev() {
            let Some(n) = self.get_mut(s.node) else { continue };
            // The path's own moves here count as played.
            n.each_role_choice(&s.moves, |_, e| {
                if let Some(k) = m.move_index(e.mv) {
                    let w = k as usize / 64;
                    if w >= seen.len() {
                        seen.resize(w + 1, 0);
                    }
                    seen[w] |= 1 << (k % 64);
                }
            });
            for role in 0..n.ends.len() {
                if n.moves(role) < 2 {
                    continue;
                }
                let v = value.get(role).copied().unwrap_or(0.0) as f32;
                for e in n.role_mut(role) {
                    let Some(k) = m.move_index(e.mv) else { continue };
                    if seen.get(k as usize / 64).is_some_and(|w| w >> (k % 64) & 1 == 1) {
                        e.amaf += 1;
                        e.amaf_sum += v;
                    }
                }
            }
        }
        self.amaf_seen = seen;
    }

    /// [`Graph::backprop`] of the value of a terminal or solved leaf
    /// ([`Leaf::Known`]), then solves what it decides on the way up (only
    /// such a value can solve a node).
    pub fn backprop_known(&mut self, path: &[Step], value: &[f64]) {
        // Solved first, so that minimax backups carry the exact values up.
        self.update_solved(path);
        if self.drop_lost && self.loses_unsolved(path) {
            self.unvisit(path);
            return;
        }
        self.add_values(path, value, false);
    }

    /// Whether the lowest node of `path` that is not solved (those below
    /// it are: the path ends in a known value, and they were solved as far
    /// as it decides) chose a move whose solved child is a loss for its
    /// chooser.
    pub(super) fn loses_unsolved(&self, path: &[Step]) -> bool {
        let Some(i) = path.iter().rposition(|s| self.get(s.node).is_none_or(|n| !n.solved)) else { return false };
        let Some(n) = self.get(path[i].node) else { return false };
        let child = match path.get(i + 1) {
            Some(s) => Some(s.node),
            None => self.child(n, &path[i].moves),
        };
        let Some(c) = child.and_then(|c| self.get(c)).filter(|c| c.solved) else { return false };
        n.chooser(self.roles).and_then(|r| c.value.get(r)).is_some_and(|&v| v <= 1e-9)
    }

    /// Takes back the visits a selection added along `path` whose value
    /// will never be backed up (steps whose node was recycled since are
    /// skipped: their statistics went with them).
    pub fn unvisit(&mut self, path: &[Step]) {
        for s in path {
            let Some(n) = self.get_mut(s.node) else { continue };
            n.visits = n.visits.saturating_sub(1);
            n.each_choice(&s.moves, |e| e.visits = e.visits.saturating_sub(1));
        }
    }
}
