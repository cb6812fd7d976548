//! The node pool: nodes found by their state's hash, made, and recycled
//! when the pool is full; a node's moves expanded and its children linked.

use super::*;

impl<M: Simulator> Graph<M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    pub(super) fn get(&self, r: NodeRef) -> Option<&Node<M::State, M::Move>> {
        self.nodes.get(r.idx as usize).filter(|n| n.live && n.gen == r.gen)
    }

    pub(super) fn get_mut(&mut self, r: NodeRef) -> Option<&mut Node<M::State, M::Move>> {
        self.nodes.get_mut(r.idx as usize).filter(|n| n.live && n.gen == r.gen)
    }

    /// The live node of `state` (with hash `hash`), if any.
    pub(super) fn find(&self, hash: u64, state: &M::State) -> Option<NodeRef> {
        let &(_, i) = self.table.find(hash, |&(h, i)| {
            let n = &self.nodes[i as usize];
            h == hash && n.live && n.state.as_ref() == Some(state)
        })?;
        Some(NodeRef { idx: i, gen: self.nodes[i as usize].gen })
    }

    /// A slot for a new node of `state`, fresh and in the table (recycling
    /// a node when the pool is full).
    pub(super) fn make(&mut self, state: M::State, hash: u64) -> NodeRef {
        let idx = match self.free.pop() {
            Some(i) => i,
            None if self.nodes.len() < self.capacity => {
                self.nodes.push(Node::empty());
                self.nodes.len() as u32 - 1
            }
            None => self.evict(),
        };
        let n = &mut self.nodes[idx as usize];
        n.reset(state, hash, self.iteration);
        // The hashes are the machine's state hashes, already mixed.
        self.table.insert_unique(hash, (hash, idx), |&(h, _)| h);
        self.live += 1;
        NodeRef { idx, gen: n.gen }
    }

    /// The node of `state`: found through the table, or made (recycling a
    /// node when the pool is full) with its terminal flag and goals from
    /// the machine.
    pub(super) fn node_for(&mut self, m: &mut M, state: M::State) -> Result<NodeRef, MachineError> {
        let hash = m.state_hash(&state);
        if let Some(r) = self.find(hash, &state) {
            return Ok(r);
        }
        let terminal = m.is_terminal(&state)?;
        let mut value = SmallVec::new();
        if terminal {
            for r in 0..self.roles {
                value.push(m.goal(&state, r)?.score() as f64 / 100.0);
            }
        }
        let r = self.make(state, hash);
        let n = &mut self.nodes[r.idx as usize];
        n.terminal = terminal;
        n.solved = terminal;
        n.value = value;
        self.evaluate_share(m, r);
        Ok(r)
    }

    /// Recycles the least recently visited of a sample of nodes (never the
    /// root, never one visited in this iteration).
    pub(super) fn evict(&mut self) -> u32 {
        let mut best: Option<(u64, u32)> = None;
        for _ in 0..32 {
            let i = self.rng.below(self.nodes.len()) as u32;
            let n = &self.nodes[i as usize];
            if i == self.root.idx || !n.live || n.touched >= self.iteration {
                continue;
            }
            if best.is_none_or(|(t, _)| n.touched < t) {
                best = Some((n.touched, i));
            }
        }
        let i = match best {
            Some((_, i)) => i,
            // A sample of only fresh nodes: take any that is not the root.
            None => {
                (0..self.nodes.len() as u32).find(|&i| i != self.root.idx && self.nodes[i as usize].live).unwrap_or(0)
            }
        };
        self.kill(i);
        i
    }

    pub(super) fn kill(&mut self, i: u32) {
        let n = &mut self.nodes[i as usize];
        if !n.live {
            return;
        }
        if let Ok(entry) = self.table.find_entry(n.hash, |&(_, x)| x == i) {
            entry.remove();
        }
        n.live = false;
        n.gen = n.gen.wrapping_add(1);
        n.state = None;
        self.live -= 1;
    }

    pub(super) fn expand(&mut self, m: &mut M, r: NodeRef) -> Result<(), MachineError> {
        let state =
            self.nodes[r.idx as usize].state.clone().ok_or(MachineError::SearchBug("a node without a state"))?;
        let mut moves: SmallVec<[Vec<M::Move>; 4]> = SmallVec::new();
        for role in 0..self.roles {
            m.legal_moves(&state, role, &mut self.scratch)?;
            if self.scratch.len() > u16::MAX as usize {
                // Paths name moves by a u16 index.
                let role = m.roles()[role].clone();
                return Err(MachineError::TooManyMoves { role, moves: self.scratch.len(), max: u16::MAX as usize });
            }
            moves.push(self.scratch.clone());
        }
        let n = &mut self.nodes[r.idx as usize];
        if moves.iter().any(|m| m.is_empty()) {
            // A role without a legal move in a non-terminal state (a broken
            // game): treat it as the end, with the goals the rules give.
            n.terminal = true;
            n.solved = true;
            n.value = (0..self.roles)
                .map(|role| m.goal(&state, role).map(|g| g.score() as f64 / 100.0))
                .collect::<Result<_, _>>()?;
            return Ok(());
        }
        n.set_moves(&moves);
        self.link_terminal_children(m, r, &state)
    }

    /// Makes the children of `r` that are terminal, where one role chooses
    /// (the others have one move each): every child with `expand_terminal`,
    /// else those of the `winning` moves (nothing without either).
    pub(super) fn link_terminal_children(
        &mut self,
        m: &mut M,
        r: NodeRef,
        state: &M::State,
    ) -> Result<(), MachineError> {
        if !self.expand_terminal && self.winning.is_none() {
            return Ok(());
        }
        let n = &self.nodes[r.idx as usize];
        let Some(chooser) = n.chooser(self.roles).filter(|&c| n.moves(c) > 1) else { return Ok(()) };
        // The chooser's moves whose children are computed (usually none
        // of them by the winning set: then nothing more is done).
        let tries: SmallVec<[usize; 8]> = match (&self.winning, self.expand_terminal) {
            (Some(w), false) => (0..n.moves(chooser))
                .filter(|&i| m.move_index(n.role(chooser)[i].mv).is_some_and(|x| w.binary_search(&x).is_ok()))
                .collect(),
            _ => (0..n.moves(chooser)).collect(),
        };
        if tries.is_empty() {
            return Ok(());
        }
        let mut joint: Vec<M::Move> = (0..self.roles).map(|x| n.role(x)[0].mv).collect();
        let mut linked = false;
        for i in tries {
            let Some(n) = self.get(r) else { return Ok(()) };
            joint[chooser] = n.role(chooser)[i].mv;
            let next = m.next_state(state, &joint)?;
            if !m.is_terminal(&next)? {
                continue;
            }
            let child = self.node_for(m, next)?;
            let mut moves: SmallVec<[u16; 4]> = SmallVec::from_elem(0, self.roles);
            moves[chooser] = i as u16;
            self.link(r, &moves, child);
            linked = true;
        }
        // A win one move away solves the node now.
        if linked {
            self.solve(r);
        }
        Ok(())
    }

    /// Records `child` as where `moves` lead from `parent` (if it is still live).
    pub(super) fn link(&mut self, parent: NodeRef, moves: &[u16], child: NodeRef) {
        let Some(n) = self.get_mut(parent) else { return };
        if let Some(c) = n.single {
            if let Some(e) = n.edge_mut(c as usize, moves[c as usize] as usize) {
                e.child = child;
            }
            return;
        }
        let key = Self::joint_key(n, moves);
        let Some(joint) = n.joint.as_deref_mut() else { return };
        let key = match (key, &mut joint.wide) {
            (Some(k), _) => k,
            (None, Some(wide)) => {
                wide.push(moves.iter().copied().collect());
                wide.len() as u64 - 1
            }
            (None, None) => return,
        };
        let children = &mut joint.children;
        let at = children.binary_search_by_key(&key, |&(j, _)| j).unwrap_or_else(|e| e);
        if children.get(at).is_some_and(|&(j, _)| j == key) {
            children[at].1 = child;
        } else {
            children.insert(at, (key, child));
        }
    }

    /// The key of the joint move `moves` (each role's move index) among
    /// `n`'s children: the mixed-radix number of the move indices, or on a
    /// wide node its position in the node's list (`None` if not there).
    pub(super) fn joint_key(n: &Node<M::State, M::Move>, moves: &[u16]) -> Option<u64> {
        match n.joint.as_deref().and_then(|j| j.wide.as_ref()) {
            None => Some(moves.iter().enumerate().fold(0u64, |j, (r, &m)| j * n.moves(r) as u64 + m as u64)),
            Some(wide) => wide.iter().position(|w| w[..] == *moves).map(|i| i as u64),
        }
    }

    /// The live child that `moves` lead to from `n`, if it is known.
    pub(super) fn child(&self, n: &Node<M::State, M::Move>, moves: &[u16]) -> Option<NodeRef> {
        if let Some(c) = n.single {
            let c = n.role(c as usize).get(moves[c as usize] as usize)?.child;
            return self.get(c).map(|_| c);
        }
        let key = Self::joint_key(n, moves)?;
        let children = &n.joint.as_deref()?.children;
        let i = children.binary_search_by_key(&key, |&(j, _)| j).ok()?;
        let c = children[i].1;
        self.get(c).map(|_| c)
    }
}
