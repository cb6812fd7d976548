//! MCTS-Solver: nodes whose value their children prove, proven losses
//! passed by, and the root's proven value.

use super::*;

impl<M: Simulator> Graph<M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    /// Solves nodes on `path` from the bottom up, as far as their value is
    /// determined: a node where one role chooses (the others have one move)
    /// is solved once a child gives the chooser the best possible value
    /// (its greatest reachable goal, `goal_max`), or once every child is
    /// solved (the chooser takes the best). Nodes where two or more roles
    /// choose at once are not solved: their value under best play is a
    /// mixed strategy's, which needs more than the children's values.
    pub(super) fn update_solved(&mut self, path: &[Step]) {
        for s in path.iter().rev() {
            if !self.solve(s.node) {
                return;
            }
        }
    }

    /// Solves node `r` if its children decide its value (see
    /// [`Graph::update_solved`]); whether it is solved.
    pub(super) fn solve(&mut self, r: NodeRef) -> bool {
        let Some(n) = self.get(r) else { return false };
        if n.solved {
            return true;
        }
        if !n.expanded {
            return false;
        }
        let Some(chooser) = n.chooser(self.roles) else { return false };
        // The best solved child (its value for the chooser and where it
        // is), whether every child is solved, and the moves that lose.
        let mut best: Option<(f64, NodeRef, u16)> = None;
        let mut all = true;
        let mut lost: SmallVec<[u16; 8]> = SmallVec::new();
        let mut settled: SmallVec<[u16; 8]> = SmallVec::new();
        let mut moves: SmallVec<[u16; 4]> = SmallVec::from_elem(0, self.roles);
        for i in 0..n.moves(chooser) {
            moves[chooser] = i as u16;
            let solved = self.child(n, &moves).and_then(|c| Some((c, self.get(c)?))).filter(|(_, c)| c.solved);
            match solved {
                Some((at, c)) => {
                    let v = c.value.get(chooser).copied().unwrap_or(0.0);
                    if best.is_none_or(|(b, _, _)| v > b) {
                        best = Some((v, at, i as u16));
                    }
                    if v <= 0.0 && !n.role(chooser)[i].lost {
                        lost.push(i as u16);
                    }
                    if !n.role(chooser)[i].settled {
                        settled.push(i as u16);
                    }
                }
                None => all = false,
            }
        }
        let done = match best {
            Some((b, _, _)) if b >= self.goal_max[chooser] - 1e-9 => true,
            Some(_) => all,
            None => false,
        };
        if !done {
            let n = &mut self.nodes[r.idx as usize];
            for i in lost {
                if let Some(e) = n.edge_mut(chooser, i as usize) {
                    e.lost = true;
                }
            }
            for i in settled {
                if let Some(e) = n.edge_mut(chooser, i as usize) {
                    e.settled = true;
                }
            }
            n.floor = best.map_or((0.0, NO_PROOF), |(v, _, i)| (v, i));
            return false;
        }
        let value = best.and_then(|(_, at, _)| self.get(at)).map(|c| c.value.clone()).unwrap_or_default();
        let n = &mut self.nodes[r.idx as usize];
        n.solved = true;
        n.value = value;
        n.proof = best.map_or(NO_PROOF, |(_, _, i)| i);
        if self.minimax_on() {
            let v = self.nodes[r.idx as usize].value.first().copied();
            self.nodes[r.idx as usize].share = v.map_or(f32::NAN, |v| (3.0 * (2.0 * v - 1.0)) as f32);
        }
        true
    }

    pub fn root_solved(&self) -> Option<SmallVec<[f64; 4]>> {
        self.get(self.root).filter(|n| n.solved).map(|n| n.value.clone())
    }

    /// Whether the root is solved (no allocation, for hot loops).
    pub fn is_root_solved(&self) -> bool {
        self.get(self.root).is_some_and(|n| n.solved)
    }
}
