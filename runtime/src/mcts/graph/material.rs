//! What the analysis's material and learnt heuristics add to the values:
//! seeds of new nodes, implicit minimax of the material share, and
//! exchanges valued where they end.

use super::*;

/// Role 0's value (0..1) of the exchange that node `j` of a path ends
/// (`mats`: each node's role 0 share of the material and material on the
/// board, [`Node::mat`]), against the node before the exchange; `None`
/// where `j` ends none: its move changed the material, or the move before
/// did not. Sancho's heuristic sequences (`TreeNode.updateStats`).
pub(super) fn exchange_value(mats: &[(f32, f32)], j: usize) -> Option<f64> {
    // Whether the move into node `k` changed the material (NaN: unknown,
    // taken as unchanged).
    let changed = |k: usize| k >= 1 && k < mats.len() && (mats[k].0 - mats[k - 1].0).abs() > 1e-6;
    if j < 2 || j >= mats.len() || changed(j) || !changed(j - 1) {
        return None;
    }
    let mut k = j - 1;
    while changed(k) {
        k -= 1;
    }
    let ((now, total), then) = (mats[j], mats[k].0);
    let h = Material::value_of_share(now as f64, total as f64, then as f64);
    ((h - 0.5).abs() > 1e-9).then_some(h)
}

impl<M: Simulator> Graph<M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    pub(super) fn material_backup_on(&self) -> bool {
        self.material_backup && self.material.is_some() && self.roles == 2
    }

    /// Whether implicit minimax backups are on.
    pub(super) fn minimax_on(&self) -> bool {
        self.minimax > 0.0 && self.material.is_some()
    }

    /// Role 0's material share in `n` (see [`Node::share`]): ±3 (or 0,
    /// a draw) where its value is known.
    pub(super) fn share_of(&self, m: &M, n: &Node<M::State, M::Move>) -> f32 {
        if n.terminal || n.solved {
            return n.value.first().map_or(f32::NAN, |&v| (3.0 * (2.0 * v - 1.0)) as f32);
        }
        match (&self.material, n.state.as_ref().and_then(|s| m.base_bits(s))) {
            (Some(mat), Some(bits)) => {
                let (x, y) = (mat.of(0, bits) + 1e-6, mat.of(1, bits) + 1e-6);
                ((x - y) / (x + y)) as f32
            }
            _ => f32::NAN,
        }
    }

    /// Gives a new node its material share, when minimax backups or
    /// material backups are on.
    pub(super) fn evaluate_share(&mut self, m: &M, r: NodeRef) {
        if self.minimax_on() {
            if let Some(n) = self.get(r) {
                let share = self.share_of(m, n);
                self.nodes[r.idx as usize].share = share;
            }
        }
        self.evaluate_mat(m, r);
    }

    /// Gives node `r` its material, when material backups are on.
    pub(super) fn evaluate_mat(&mut self, m: &M, r: NodeRef) {
        if self.material_backup_on() {
            let bits = self.get(r).and_then(|n| n.state.as_ref()).and_then(|s| m.base_bits(s));
            if let (Some(mat), Some(bits)) = (&self.material, bits) {
                let (x, y) = (mat.of(0, bits) + 1e-6, mat.of(1, bits) + 1e-6);
                self.nodes[r.idx as usize].mat = (((x - y) / (x + y)) as f32, (x + y) as f32);
            }
        }
    }

    /// The root's material share and the scale of a change in it (a
    /// quarter of the material on the board, as [`Material::relative`]).
    pub(super) fn root_material(&self, m: &M) -> (f64, f64) {
        let bits = self.get(self.root).and_then(|n| n.state.as_ref()).and_then(|s| m.base_bits(s));
        match (&self.material, bits) {
            (Some(mat), Some(bits)) => {
                let (x, y) = (mat.of(0, bits) + 1e-6, mat.of(1, bits) + 1e-6);
                ((x - y) / (x + y), (x + y) / 4.0)
            }
            _ => (0.0, 1.0),
        }
    }

    /// `role`'s value (0..1) of a minimax share, against the root's.
    pub(super) fn share_value(&self, share: f32, role: usize) -> f64 {
        let v0 = if share.abs() >= 2.5 {
            (share > 0.0) as u8 as f64
        } else {
            let (root, scale) = self.root_share;
            1.0 / (1.0 + (-scale * (share as f64 - root)).exp())
        };
        if role == 0 {
            v0
        } else {
            1.0 - v0
        }
    }

    /// Backs the minimax share up into `r` from its children in the graph:
    /// the best for the one role that chooses there.
    pub(super) fn back_up_share(&mut self, r: NodeRef) {
        let Some(n) = self.get(r) else { return };
        let Some(c) = n.single.map(usize::from) else { return };
        if n.solved || n.moves(c) < 2 {
            return;
        }
        let mut best = f32::NAN;
        for e in n.role(c) {
            let Some(child) = self.get(e.child) else { continue };
            let v = child.share;
            if v.is_nan() {
                continue;
            }
            if best.is_nan() || (c == 0 && v > best) || (c == 1 && v < best) {
                best = v;
            }
        }
        if !best.is_nan() {
            self.nodes[r.idx as usize].share = best;
        }
    }

    /// Each role's predicted value of `child` (NaN where there is none)
    /// and how many visits it is worth: its material relative to the
    /// root's, else the learnt evaluator's prediction.
    pub(super) fn predict(&self, m: &M, parent: NodeRef, child: NodeRef) -> Option<(SmallVec<[f64; 4]>, u32)> {
        let c = self.get(child).filter(|c| !c.terminal && !c.solved)?;
        let bits = m.base_bits(c.state.as_ref()?)?;
        if let (Some(mat), true) = (&self.material, self.local_material) {
            let p = self.get(parent)?;
            let h = mat.relative(bits, m.base_bits(p.state.as_ref()?)?);
            // A move that leaves the material as it is gets no seed.
            if (h - 0.5).abs() < 1e-9 {
                return None;
            }
            let v = [h, 1.0 - h];
            let mut out = SmallVec::from_elem(f64::NAN, self.roles);
            for (r, o) in out.iter_mut().enumerate() {
                *o = Self::shift(self.reference_mean(p, r), v[r]);
            }
            return Some((out, mat.weight));
        }
        if let Some(mat) = &self.material {
            let root = self.get(self.root)?;
            let h = mat.relative(bits, m.base_bits(root.state.as_ref()?)?);
            let v = [h, 1.0 - h];
            let mut out = SmallVec::from_elem(f64::NAN, self.roles);
            for (r, o) in out.iter_mut().enumerate() {
                *o = self.recentre(r, v[r]);
            }
            return Some((out, mat.weight));
        }
        let h = self.heuristic.as_ref()?;
        let mut v = SmallVec::from_elem(f64::NAN, self.roles);
        h.evaluate(bits, &mut v);
        Some((v, h.prior_visits))
    }

    /// A relative value `h` (0.5: no change since the root) of role `r`
    /// as an absolute one: the root's mean value for `r`, moved towards 1
    /// (or 0) by the share `h` moved from 0.5 towards it (Sancho's
    /// normalisation), once the root has enough visits to have a mean.
    pub(super) fn recentre(&self, r: usize, h: f64) -> f64 {
        let Some(root) = self.get(self.root).filter(|n| n.expanded && n.visits > 50) else { return h };
        match self.chooser_mean(root, r) {
            Some((mean, _)) => Self::shift(mean, h),
            None => h,
        }
    }

    /// Role `r`'s mean value at node `n` over its chooser's moves, and the
    /// values it is taken over; `None` without a chooser or values. Two
    /// roles (material is only found there): the other role's mean is the
    /// complement, as goals in these games sum to 100.
    pub(super) fn chooser_mean(&self, n: &Node<M::State, M::Move>, r: usize) -> Option<(f64, u32)> {
        let c = n.chooser(self.roles)?;
        let (sum, visits) = n.role(c).iter().fold((0.0, 0u32), |(s, v), e| (s + e.sum, v + e.backed));
        if visits == 0 {
            return None;
        }
        let mean = sum / visits as f64;
        Some((if r == c { mean } else { 1.0 - mean }, visits))
    }

    /// `mean` moved towards 1 by the share `h` moved from 0.5 towards 1
    /// (towards 0 below 0.5): Sancho's seeding of a relative value.
    pub(super) fn shift(mean: f64, h: f64) -> f64 {
        if h > 0.5 {
            mean + (1.0 - mean) * (h - 0.5) * 2.0
        } else {
            mean - mean * (0.5 - h) * 2.0
        }
    }

    /// Role `r`'s mean value at node `n` (two roles, goals summing to the
    /// maximum), drawn towards 0.5 while `n` has few visits: weight
    /// visits/50 against 1, as Sancho weighs its reference node.
    pub(super) fn reference_mean(&self, n: &Node<M::State, M::Move>, r: usize) -> f64 {
        let Some((mean, visits)) = self.chooser_mean(n, r) else { return 0.5 };
        let w = visits as f64 / 50.0;
        (mean * w + 0.5) / (w + 1.0)
    }
}
