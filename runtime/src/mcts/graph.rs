//! The search graph: a pool of nodes owned by the search thread alone (no
//! locks: the single-writer principle), one node per distinct state found
//! through a hash table (transpositions make it a DAG).
//!
//! Decisions are per role (decoupled UCT): at each node every role picks
//! its own move by UCB on its own value, so simultaneous moves and n-player
//! games with goal vectors need nothing special; in turn-based games the
//! roles not to move have one move (a noop).
//!
//! The pool has a fixed size. When it is full, the least recently visited
//! of a sample of nodes is recycled; its generation is bumped, so every
//! edge to it, and every pending rollout path through it, goes stale
//! instead of dangling.

use crate::heuristic::Evaluator;
use crate::machine::MachineError;
use crate::rng::Rng;
use crate::simulate::Simulator;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::sync::Arc;

/// A reference to a node that knows which life of the slot it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeRef {
    pub idx: u32,
    pub gen: u32,
}

/// One role's moves at a node, with their statistics.
#[derive(Clone, Debug, Default)]
pub(crate) struct RoleMoves<Mv> {
    pub(crate) moves: Vec<Mv>,
    pub(crate) visits: Vec<u32>,
    /// Sum of this role's values (0..1) over the visits.
    pub(crate) sums: Vec<f64>,
}

pub(crate) struct Node<S, Mv> {
    gen: u32,
    live: bool,
    state: Option<S>,
    hash: u64,
    terminal: bool,
    solved: bool,
    /// Goals (0..1) of a terminal or solved node.
    value: SmallVec<[f64; 4]>,
    expanded: bool,
    pub(crate) roles: Vec<RoleMoves<Mv>>,
    /// Joint move index (mixed radix of the roles' move indices) to child,
    /// sorted by joint index.
    children: Vec<(u32, NodeRef)>,
    visits: u32,
    touched: u64,
}

impl<S, Mv> Node<S, Mv> {
    fn empty() -> Self {
        Node {
            gen: 0,
            live: false,
            state: None,
            hash: 0,
            terminal: false,
            solved: false,
            value: SmallVec::new(),
            expanded: false,
            roles: Vec::new(),
            children: Vec::new(),
            visits: 0,
            touched: 0,
        }
    }
}

/// One step of a selection path: the node and each role's move there.
#[derive(Clone, Debug)]
pub struct Step {
    pub node: NodeRef,
    pub moves: SmallVec<[u16; 4]>,
}

/// Where a selection ended.
pub enum Leaf<S> {
    /// Value known (terminal or solved): back it up now.
    Known(SmallVec<[f64; 4]>),
    /// A node whose value a rollout from this state estimates.
    Rollout(S),
}

pub struct Graph<M: Simulator>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    nodes: Vec<Node<M::State, M::Move>>,
    free: Vec<u32>,
    table: FxHashMap<u64, SmallVec<[u32; 1]>>,
    capacity: usize,
    pub(crate) root: NodeRef,
    iteration: u64,
    roles: usize,
    pub(crate) rng: Rng,
    exploration: f64,
    live: usize,
    scratch: Vec<M::Move>,
    heuristic: Option<Arc<Evaluator>>,
    /// Per role, the best value (0..1) the game can give it: a node where
    /// a child gives the chooser that much is solved.
    goal_max: SmallVec<[f64; 4]>,
    /// On expansion, make the children that end the game (where one role
    /// chooses), so that a win one move away is seen at once.
    expand_terminal: bool,
}

impl<M: Simulator> Graph<M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    pub fn new(m: &mut M, root: M::State, capacity: usize, exploration: f64, seed: u64) -> Result<Self, MachineError> {
        let mut g = Graph {
            nodes: Vec::new(),
            free: Vec::new(),
            table: FxHashMap::default(),
            capacity: capacity.max(16),
            root: NodeRef { idx: 0, gen: 0 },
            iteration: 0,
            roles: m.roles().len(),
            rng: Rng::new(seed),
            exploration,
            live: 0,
            scratch: Vec::new(),
            heuristic: None,
            goal_max: SmallVec::from_elem(1.0, m.roles().len()),
            expand_terminal: false,
        };
        g.root = g.node_for(m, root)?;
        Ok(g)
    }

    /// New nodes start with the evaluator's prediction (see [`Evaluator`]).
    pub fn set_heuristic(&mut self, h: Option<Arc<Evaluator>>) {
        self.heuristic = h.filter(|h| h.prior_visits > 0);
    }

    /// Each role's greatest reachable goal (0..1), from the analysis's goal bounds.
    pub fn set_goal_max(&mut self, max: &[f64]) {
        if max.len() == self.roles {
            self.goal_max = max.iter().map(|&x| x.clamp(0.0, 1.0)).collect();
        }
    }

    pub fn set_expand_terminal(&mut self, on: bool) {
        self.expand_terminal = on;
    }

    /// Each role's predicted value of `child` (NaN where there is none).
    fn predict(&self, m: &M, child: NodeRef) -> Option<SmallVec<[f64; 4]>> {
        let h = self.heuristic.as_ref()?;
        let c = self.get(child).filter(|c| !c.terminal && !c.solved)?;
        let bits = m.base_bits(c.state.as_ref()?)?;
        let mut v = SmallVec::from_elem(f64::NAN, self.roles);
        h.evaluate(bits, &mut v);
        Some(v)
    }

    pub fn live_nodes(&self) -> usize {
        self.live
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn get(&self, r: NodeRef) -> Option<&Node<M::State, M::Move>> {
        self.nodes.get(r.idx as usize).filter(|n| n.live && n.gen == r.gen)
    }

    /// Makes the node of `state` the root (reusing it if it is in the graph).
    pub fn set_root(&mut self, m: &mut M, state: M::State) -> Result<(), MachineError> {
        self.root = self.node_for(m, state)?;
        Ok(())
    }

    pub fn root_state(&self) -> Option<&M::State> {
        self.get(self.root).and_then(|n| n.state.as_ref())
    }

    /// The node of `state`: found through the table, or made (recycling a
    /// node when the pool is full).
    fn node_for(&mut self, m: &mut M, state: M::State) -> Result<NodeRef, MachineError> {
        let hash = m.state_hash(&state);
        if let Some(cands) = self.table.get(&hash) {
            for &i in cands {
                let n = &self.nodes[i as usize];
                if n.live && n.state.as_ref() == Some(&state) {
                    return Ok(NodeRef { idx: i, gen: n.gen });
                }
            }
        }
        let idx = match self.free.pop() {
            Some(i) => i,
            None if self.nodes.len() < self.capacity => {
                self.nodes.push(Node::empty());
                self.nodes.len() as u32 - 1
            }
            None => self.evict(),
        };
        let terminal = m.is_terminal(&state)?;
        let mut value = SmallVec::new();
        if terminal {
            for r in 0..self.roles {
                value.push(m.goal(&state, r)?.score() as f64 / 100.0);
            }
        }
        let n = &mut self.nodes[idx as usize];
        n.live = true;
        n.state = Some(state);
        n.hash = hash;
        n.terminal = terminal;
        n.solved = terminal;
        n.value = value;
        n.expanded = false;
        n.roles.clear();
        n.children.clear();
        n.visits = 0;
        n.touched = self.iteration;
        self.table.entry(hash).or_default().push(idx);
        self.live += 1;
        Ok(NodeRef { idx, gen: n.gen })
    }

    /// Recycles the least recently visited of a sample of nodes (never the
    /// root, never one visited in this iteration).
    fn evict(&mut self) -> u32 {
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

    fn kill(&mut self, i: u32) {
        let n = &mut self.nodes[i as usize];
        if !n.live {
            return;
        }
        if let Some(c) = self.table.get_mut(&n.hash) {
            c.retain(|x| *x != i);
            if c.is_empty() {
                self.table.remove(&n.hash);
            }
        }
        n.live = false;
        n.gen = n.gen.wrapping_add(1);
        n.state = None;
        n.roles = Vec::new();
        n.children = Vec::new();
        self.live -= 1;
    }

    fn expand(&mut self, m: &mut M, r: NodeRef) -> Result<(), MachineError> {
        let state = self.nodes[r.idx as usize]
            .state
            .clone()
            .ok_or_else(|| MachineError::Other("a node without a state".into()))?;
        let mut roles = Vec::with_capacity(self.roles);
        let mut stuck = false;
        for role in 0..self.roles {
            m.legal_moves(&state, role, &mut self.scratch)?;
            stuck |= self.scratch.is_empty();
            let k = self.scratch.len();
            roles.push(RoleMoves { moves: self.scratch.clone(), visits: vec![0; k], sums: vec![0.0; k] });
        }
        let n = &mut self.nodes[r.idx as usize];
        if stuck {
            // A role without a legal move in a non-terminal state (a broken
            // game): treat it as the end, with the goals the rules give.
            n.terminal = true;
            n.solved = true;
            n.value = (0..self.roles)
                .map(|role| m.goal(&state, role).map(|g| g.score() as f64 / 100.0))
                .collect::<Result<_, _>>()?;
            return Ok(());
        }
        n.roles = roles;
        n.expanded = true;
        if self.expand_terminal {
            self.link_terminal_children(m, r, &state)?;
        }
        Ok(())
    }

    /// Makes the children of `r` that are terminal, where one role chooses
    /// (the others have one move each).
    fn link_terminal_children(&mut self, m: &mut M, r: NodeRef, state: &M::State) -> Result<(), MachineError> {
        let n = &self.nodes[r.idx as usize];
        let choosers: SmallVec<[usize; 2]> = (0..self.roles).filter(|&x| n.roles[x].moves.len() > 1).collect();
        let [chooser] = choosers[..] else { return Ok(()) };
        let mut joint: Vec<M::Move> = n.roles.iter().map(|rm| rm.moves[0]).collect();
        for i in 0..n.roles[chooser].moves.len() {
            let Some(n) = self.get(r) else { return Ok(()) };
            joint[chooser] = n.roles[chooser].moves[i];
            let next = m.next_state(state, &joint)?;
            if !m.is_terminal(&next)? {
                continue;
            }
            let child = self.node_for(m, next)?;
            let mut moves: SmallVec<[u16; 4]> = SmallVec::from_elem(0, self.roles);
            moves[chooser] = i as u16;
            self.link(r, &moves, child);
        }
        Ok(())
    }

    /// Records `child` as where `moves` lead from `parent` (if it is still live).
    fn link(&mut self, parent: NodeRef, moves: &[u16], child: NodeRef) {
        let Some(n) = self.nodes.get_mut(parent.idx as usize).filter(|n| n.live && n.gen == parent.gen) else {
            return;
        };
        let joint = Self::joint_index(n, moves);
        let at = n.children.binary_search_by_key(&joint, |&(j, _)| j).unwrap_or_else(|e| e);
        if n.children.get(at).is_some_and(|&(j, _)| j == joint) {
            n.children[at].1 = child;
        } else {
            n.children.insert(at, (joint, child));
        }
    }

    fn joint_index(n: &Node<M::State, M::Move>, moves: &[u16]) -> u32 {
        let mut j = 0u32;
        for (r, &m) in moves.iter().enumerate() {
            j = j * n.roles[r].moves.len() as u32 + m as u32;
        }
        j
    }

    fn child(&self, n: &Node<M::State, M::Move>, joint: u32) -> Option<NodeRef> {
        let i = n.children.binary_search_by_key(&joint, |&(j, _)| j).ok()?;
        let c = n.children[i].1;
        self.get(c).map(|_| c)
    }

    /// Each role's move at `r` by UCB; unvisited moves first, at random.
    fn choose(&mut self, r: NodeRef) -> SmallVec<[u16; 4]> {
        let c = self.exploration;
        let mut out = SmallVec::new();
        for role in 0..self.roles {
            let n = &self.nodes[r.idx as usize];
            let rm = &n.roles[role];
            if rm.moves.len() == 1 {
                out.push(0);
                continue;
            }
            let total: u32 = rm.visits.iter().sum();
            let ln = (total.max(1) as f64).ln();
            let mut best = 0usize;
            let mut best_score = f64::NEG_INFINITY;
            let offset = self.rng.below(rm.moves.len());
            for k in 0..rm.moves.len() {
                let i = (k + offset) % rm.moves.len();
                let v = rm.visits[i];
                let score = if v == 0 { f64::INFINITY } else { rm.sums[i] / v as f64 + c * (ln / v as f64).sqrt() };
                if score > best_score {
                    best_score = score;
                    best = i;
                }
                if score == f64::INFINITY {
                    break;
                }
            }
            out.push(best as u16);
        }
        out
    }

    /// Walks down from the root by UCB, adding a visit to every move taken
    /// (a virtual loss until the value is backed up), and returns the path
    /// and where it ended. Expands the first node it meets that has no
    /// moves yet, and creates the child it moves to.
    pub fn select(&mut self, m: &mut M, path: &mut Vec<Step>) -> Result<Leaf<M::State>, MachineError> {
        self.iteration += 1;
        path.clear();
        let mut cur = self.root;
        loop {
            let it = self.iteration;
            let Some(n) = self.nodes.get_mut(cur.idx as usize).filter(|n| n.live && n.gen == cur.gen) else {
                return Err(MachineError::Other("the search root was recycled".into()));
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
                    return self.select(m, path);
                }
                let n = &self.nodes[cur.idx as usize];
                if n.terminal {
                    return Ok(Leaf::Known(n.value.clone()));
                }
            }
            let moves = self.choose(cur);
            let n = &mut self.nodes[cur.idx as usize];
            n.visits += 1;
            for (role, &mv) in moves.iter().enumerate() {
                n.roles[role].visits[mv as usize] += 1;
            }
            let joint = Self::joint_index(n, &moves);
            path.push(Step { node: cur, moves: moves.clone() });
            let existing = self.child(&self.nodes[cur.idx as usize], joint);
            match existing {
                // A move back to a state on this path (a pass, a repetition):
                // going on would walk the cycle; its value is a rollout's.
                Some(c) if path.iter().any(|s| s.node == c) => {
                    let cn = &self.nodes[c.idx as usize];
                    return Ok(Leaf::Rollout(
                        cn.state.clone().ok_or_else(|| MachineError::Other("a node without a state".into()))?,
                    ));
                }
                Some(c) => cur = c,
                None => {
                    let n = &self.nodes[cur.idx as usize];
                    let state = n.state.clone().ok_or_else(|| MachineError::Other("a node without a state".into()))?;
                    let jm: Vec<M::Move> =
                        moves.iter().enumerate().map(|(r, &mv)| n.roles[r].moves[mv as usize]).collect();
                    let next = m.next_state(&state, &jm)?;
                    let child = self.node_for(m, next)?;
                    let prior = self.predict(m, child);
                    let prior_visits = self.heuristic.as_ref().map_or(0, |h| h.prior_visits);
                    // The parent may have been recycled while making the
                    // child (pool full): then the path is stale; start over.
                    if self.get(cur).is_none() {
                        return self.select(m, path);
                    }
                    self.link(cur, &moves, child);
                    let n = &mut self.nodes[cur.idx as usize];
                    // Heuristic initialisation: a move tried for the first
                    // time counts `prior_visits` visits at its child's
                    // predicted value (once: not again for another reply
                    // of the other roles, nor for a recycled child).
                    for (role, v) in prior.iter().flatten().enumerate() {
                        let rm = &mut n.roles[role];
                        if v.is_finite() && rm.moves.len() > 1 && rm.visits[moves[role] as usize] == 1 {
                            rm.visits[moves[role] as usize] += prior_visits;
                            rm.sums[moves[role] as usize] += prior_visits as f64 * v;
                        }
                    }
                    let cn = &mut self.nodes[child.idx as usize];
                    cn.touched = it;
                    if cn.terminal || cn.solved {
                        let v = cn.value.clone();
                        self.update_solved(path);
                        return Ok(Leaf::Known(v));
                    }
                    return Ok(Leaf::Rollout(
                        cn.state.clone().ok_or_else(|| MachineError::Other("a node without a state".into()))?,
                    ));
                }
            }
        }
    }

    /// Adds `value` (per role, 0..1) to every move on `path`; steps whose
    /// node was recycled since are skipped.
    pub fn backprop(&mut self, path: &[Step], value: &[f64]) {
        for s in path {
            let Some(n) = self.nodes.get_mut(s.node.idx as usize).filter(|n| n.live && n.gen == s.node.gen) else {
                continue;
            };
            for (role, &mv) in s.moves.iter().enumerate() {
                if let Some(sum) = n.roles.get_mut(role).and_then(|rm| rm.sums.get_mut(mv as usize)) {
                    *sum += value.get(role).copied().unwrap_or(0.0);
                }
            }
        }
        self.update_solved(path);
    }

    /// Solves nodes on `path` from the bottom up, as far as their value is
    /// determined: a node where one role chooses (the others have one move)
    /// is solved once a child gives the chooser the best possible value
    /// (its greatest reachable goal, `goal_max`), or once every child is
    /// solved (the chooser takes the best).
    fn update_solved(&mut self, path: &[Step]) {
        for s in path.iter().rev() {
            let Some(n) = self.get(s.node) else { return };
            if n.solved || !n.expanded {
                if n.solved {
                    continue;
                }
                return;
            }
            let choosers: SmallVec<[usize; 2]> = (0..self.roles).filter(|&r| n.roles[r].moves.len() > 1).collect();
            if choosers.len() > 1 {
                return;
            }
            let chooser = choosers.first().copied().unwrap_or(0);
            let k = n.roles[chooser].moves.len();
            let mut best: Option<SmallVec<[f64; 4]>> = None;
            let mut all = true;
            for i in 0..k {
                let mut moves: SmallVec<[u16; 4]> = SmallVec::from_elem(0, self.roles);
                moves[chooser] = i as u16;
                let joint = Self::joint_index(n, &moves);
                match self.child(n, joint).and_then(|c| self.get(c)).filter(|c| c.solved) {
                    Some(c) => {
                        if best.as_ref().is_none_or(|b| c.value[chooser] > b[chooser]) {
                            best = Some(c.value.clone());
                        }
                    }
                    None => all = false,
                }
            }
            let done = match &best {
                Some(b) if b[chooser] >= self.goal_max[chooser] - 1e-9 => true,
                Some(_) => all,
                None => false,
            };
            if !done {
                return;
            }
            let value = best.unwrap_or_default();
            let n = &mut self.nodes[s.node.idx as usize];
            n.solved = true;
            n.value = value;
        }
    }

    /// At the root, `role`'s move to play: the solved best if the root is
    /// solved, else the most visited. With its mean value (0..1) and visits.
    pub fn best(&self, role: usize) -> Option<(M::Move, f64, u32)> {
        let n = self.get(self.root)?;
        let rm = n.roles.get(role)?;
        if n.solved {
            // The chooser's best solved child; others: any move.
            for i in 0..rm.moves.len() {
                let mut moves: SmallVec<[u16; 4]> = SmallVec::from_elem(0, self.roles);
                moves[role] = i as u16;
                let joint = Self::joint_index(n, &moves);
                if let Some(c) = self.child(n, joint).and_then(|c| self.get(c)) {
                    if c.solved && c.value.get(role) == n.value.get(role) {
                        return Some((rm.moves[i], n.value[role], rm.visits[i]));
                    }
                }
            }
        }
        let i = (0..rm.moves.len()).max_by_key(|&i| rm.visits[i])?;
        let mean = if rm.visits[i] > 0 { rm.sums[i] / rm.visits[i] as f64 } else { 0.0 };
        Some((rm.moves[i], mean, rm.visits[i]))
    }

    /// The root's move statistics of `role` (for merging root-parallel graphs).
    pub fn root_stats(&self, role: usize) -> Option<(Vec<M::Move>, Vec<u32>, Vec<f64>)> {
        let rm = self.get(self.root)?.roles.get(role)?;
        Some((rm.moves.clone(), rm.visits.clone(), rm.sums.clone()))
    }

    /// Replaces the root's move statistics of `role` (after merging).
    pub fn set_root_stats(&mut self, role: usize, visits: Vec<u32>, sums: Vec<f64>) {
        let r = self.root;
        if let Some(n) = self.nodes.get_mut(r.idx as usize).filter(|n| n.live && n.gen == r.gen) {
            if let Some(rm) = n.roles.get_mut(role) {
                if rm.visits.len() == visits.len() {
                    rm.visits = visits;
                    rm.sums = sums;
                }
            }
        }
    }

    pub fn root_solved(&self) -> Option<SmallVec<[f64; 4]>> {
        self.get(self.root).filter(|n| n.solved).map(|n| n.value.clone())
    }

    /// The role that has a choice at the root (the first with more than one
    /// legal move), or role 0.
    pub fn chooser(&self) -> usize {
        self.get(self.root)
            .and_then(|n| (0..self.roles).find(|&r| n.roles.get(r).is_some_and(|rm| rm.moves.len() > 1)))
            .unwrap_or(0)
    }
}
