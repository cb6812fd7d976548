//! Selection: UCB (with RAVE where on) from the root to a leaf, per role.

use super::*;

/// The natural logarithm of `x` (positive, finite), to about 1e-7: from
/// its binary exponent and a polynomial in the mantissa; several times
/// cheaper than the library's, and UCB asks for one at every node it
/// passes.
pub(super) fn ln(x: f64) -> f64 {
    let bits = x.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i64 - 1023;
    // The mantissa in [1, 2), then m = sqrt(2)-centred: [0.707, 1.414).
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    let mut e = exponent as f64;
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1.0;
    }
    // ln(m) = 2 atanh(t), t = (m - 1) / (m + 1), |t| < 0.172.
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    let series = 1.0 + t2 * (1.0 / 3.0 + t2 * (1.0 / 5.0 + t2 * (1.0 / 7.0 + t2 * (1.0 / 9.0))));
    e * std::f64::consts::LN_2 + 2.0 * t * series
}

/// UCB's score of an untried move with `a` AMAF samples summing to
/// `sum` (RAVE): [`UNTRIED`] blended with the AMAF mean plus 0.5 by the
/// weight `a / (a + 1)` that RAVE gives `a` samples and no visits, as
/// Sancho does. Without samples it is [`UNTRIED`], above every tried
/// move; with a few, the moves the rollouts found good are tried first,
/// and with many bad ones a move waits behind the tried moves that do
/// well.
pub(super) fn rave_untried(a: u32, sum: f32) -> f64 {
    if a == 0 {
        return UNTRIED;
    }
    let a = a as f64;
    let w = a / (a + 1.0);
    (1.0 - w) * UNTRIED + w * (sum as f64 / a + 0.5)
}

/// The change RAVE makes to a tried move's UCB score (mean plus
/// `explore`) for `n` visits with mean `mean` and `a` AMAF samples with
/// mean `amaf`, bias `b`: Sancho's blend `(1 - w) (mean + explore) + w
/// (amaf + explore / 7)` with `w = a / (a + n + b n a + 1)`.
pub(super) fn rave_shift(n: f64, mean: f64, explore: f64, a: f64, amaf: f64, b: f64) -> f64 {
    let w = a / (a + n + b * n * a + 1.0);
    w * (amaf - mean) - w * explore * (1.0 - 1.0 / RAVE_EXPLORATION_CUT)
}

impl<M: Simulator> Graph<M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    /// Whether the child that `moves` lead to from `n` joins the graph now
    /// (see [`Graph::set_expand_after`]).
    pub(super) fn joins(&self, n: &Node<M::State, M::Move>, moves: &[u16]) -> bool {
        let threshold = self.expand_after();
        if threshold <= 1 {
            return true;
        }
        let visits = match n.single {
            // Several roles choose: children by joint move, at once.
            None => return true,
            Some(c) if n.moves(c as usize) > 1 => {
                n.role(c as usize).get(moves[c as usize] as usize).map_or(u32::MAX, |e| e.visits)
            }
            // Every move forced: the node's visits are the move's.
            Some(_) => n.visits,
        };
        visits >= threshold
    }

    /// Each role's move at `r` by UCB; unvisited moves first, at random.
    pub(super) fn choose(&mut self, r: NodeRef) -> SmallVec<[u16; 4]> {
        let mut out = SmallVec::from_elem(0, self.roles);
        match self.nodes[r.idx as usize].single {
            Some(c) => out[c as usize] = self.ucb(r, c as usize),
            None => {
                for (role, mv) in out.iter_mut().enumerate() {
                    *mv = self.ucb(r, role);
                }
            }
        }
        out
    }

    /// Role `role`'s move at `r` by UCB1 on its own values; unvisited
    /// moves first (ties to the first met from a random offset), except
    /// with RAVE, where an unvisited move with AMAF samples is ranked by
    /// them ([`rave_untried`]).
    pub(super) fn ucb(&mut self, r: NodeRef, role: usize) -> u16 {
        let k = self.nodes[r.idx as usize].moves(role);
        if k == 1 {
            return 0;
        }
        let offset = self.rng.below(k);
        let node = &self.nodes[r.idx as usize];
        let edges = node.role(role);
        let total = match node.single {
            Some(_) => node.visits + node.prior,
            None => edges.iter().map(|e| e.visits).sum(),
        };
        let c = match self.explore.get(total as usize) {
            Some(&c) => c,
            None => self.exploration * ln(total as f64).sqrt(),
        };
        // Implicit minimax: part of a child's value is its minimax share.
        let alpha = if self.minimax_on() && node.single.is_some() { self.minimax } else { 0.0 };
        let rave = self.rave;
        let settle = self.settle;
        let (mut best, mut best_score) = (offset, f64::NEG_INFINITY);
        // From `offset` to the end, then from the start: the first of equal
        // scores wins, so ties go to a random one.
        let mut i = offset;
        for _ in 0..k {
            let e = &edges[i];
            if e.lost {
                // A proven loss is never worth a visit (were every move
                // lost, the node would be solved and not walked through).
                i = if i + 1 == k { 0 } else { i + 1 };
                continue;
            }
            let score = if settle && e.settled {
                // Below every open move's score (means and exploration
                // are not negative), so taken only where no move is open
                // (children recycled before the node was solved).
                let mean = if e.visits > 0 { e.sum / e.visits as f64 } else { 0.0 };
                mean - 10.0
            } else if e.visits == 0 {
                if rave == 0.0 || e.amaf == 0 {
                    return i as u16;
                }
                rave_untried(e.amaf, e.amaf_sum)
            } else {
                // The mean plus c / sqrt(visits).
                let v = e.visits as f64;
                let (mut score, explore) = match self.inv_sqrt.get(e.visits as usize) {
                    Some(&r) => ((e.sum * r + c) * r, c * r),
                    None => ((e.sum + c * v.sqrt()) / v, c / v.sqrt()),
                };
                if rave > 0.0 && e.amaf > 0 {
                    let a = e.amaf as f64;
                    score += rave_shift(v, e.sum / v, explore, a, e.amaf_sum as f64 / a, rave);
                }
                if alpha > 0.0 {
                    if let Some(share) = self.get(e.child).map(|ch| ch.share).filter(|x| !x.is_nan()) {
                        score += alpha * (self.share_value(share, role) - e.sum / v);
                    }
                }
                score
            };
            if score > best_score {
                (best, best_score) = (i, score);
            }
            i += 1;
            if i == k {
                i = 0;
            }
        }
        best as u16
    }

    /// Walks down from the root by UCB, adding a visit to every move taken
    /// (a virtual loss until the value is backed up), and returns the path
    /// and where it ended. Expands the first node it meets that has no
    /// moves yet, and creates the child it moves to.
    pub fn select(&mut self, m: &mut M, path: &mut Vec<Step>) -> Result<Leaf<M::State>, MachineError> {
        self.walk(m, path, false)
    }

    /// [`Graph::select`], except that a child not in the graph yet is left
    /// for the caller to compute ([`Leaf::Expand`], where the machine
    /// indexes its moves).
    pub fn select_lazy(&mut self, m: &mut M, path: &mut Vec<Step>) -> Result<Leaf<M::State>, MachineError> {
        self.walk(m, path, true)
    }

    pub(super) fn walk(&mut self, m: &mut M, path: &mut Vec<Step>, lazy: bool) -> Result<Leaf<M::State>, MachineError> {
        self.iteration += 1;
        path.clear();
        if self.minimax_on() {
            self.root_share = self.root_material(m);
        }
        // The first root was made before the material was set.
        if self.material_backup_on() && self.get(self.root).is_some_and(|n| n.mat.0.is_nan()) {
            self.evaluate_mat(m, self.root);
        }
        let mut cur = self.root;
        let no_state = || MachineError::SearchBug("a node without a state");
        loop {
            let it = self.iteration;
            let Some(n) = self.get_mut(cur) else {
                return Err(MachineError::SearchBug("the search root was recycled"));
            };
            n.touched = it;
            if n.terminal || n.solved {
                return Ok(Leaf::Known(n.value.clone()));
            }
            if !n.expanded {
                self.expand(m, cur)?;
                // Making terminal children may have recycled this node
                // (a full pool of nodes all used in this iteration).
                if self.get(cur).is_none() {
                    return self.walk(m, path, lazy);
                }
                let n = &self.nodes[cur.idx as usize];
                if n.terminal {
                    return Ok(Leaf::Known(n.value.clone()));
                }
            }
            let moves = self.choose(cur);
            let n = &mut self.nodes[cur.idx as usize];
            n.visits += 1;
            n.each_choice(&moves, |e| e.visits += 1);
            let existing = self.child(&self.nodes[cur.idx as usize], &moves);
            path.push(Step { node: cur, moves });
            let moves = &path[path.len() - 1].moves;
            match existing {
                // A move back to a state on this path (a pass, a repetition):
                // going on would walk the cycle; its value is a rollout's.
                Some(c) if path.iter().any(|s| s.node == c) => {
                    return Ok(Leaf::Rollout(self.nodes[c.idx as usize].state.clone().ok_or_else(no_state)?));
                }
                Some(c) => cur = c,
                None => {
                    let n = &self.nodes[cur.idx as usize];
                    let state = n.state.clone().ok_or_else(no_state)?;
                    let joins = self.joins(n, moves);
                    let jm: SmallVec<[M::Move; 4]> =
                        moves.iter().enumerate().map(|(r, &mv)| n.role(r)[mv as usize].mv).collect();
                    if lazy {
                        let joint: Option<SmallVec<[u32; 4]>> = jm.iter().map(|&mv| m.move_index(mv)).collect();
                        if let Some(joint) = joint {
                            return Ok(Leaf::Expand { parent: state, joint, attach: joins });
                        }
                    }
                    let moves = moves.clone();
                    let next = m.next_state(&state, &jm)?;
                    // A terminal child joins at once: its value is known,
                    // and proofs are made of such nodes.
                    if !joins && !m.is_terminal(&next)? {
                        return Ok(Leaf::Rollout(next));
                    }
                    let child = self.node_for(m, next)?;
                    // The parent may have been recycled while making the
                    // child (pool full): then the path is stale; start over.
                    if self.get(cur).is_none() {
                        return self.walk(m, path, lazy);
                    }
                    self.link(cur, &moves, child);
                    self.initialise(m, cur, &moves, child);
                    let cn = &mut self.nodes[child.idx as usize];
                    cn.touched = it;
                    if cn.terminal || cn.solved {
                        let v = cn.value.clone();
                        self.update_solved(path);
                        return Ok(Leaf::Known(v));
                    }
                    return Ok(Leaf::Rollout(cn.state.clone().ok_or_else(no_state)?));
                }
            }
        }
    }
}
