//! Plain single-threaded UCT: the baseline the strength tests measure
//! [`Search`](super::Search) against. A tree (no transpositions), rebuilt
//! from each new root; decoupled UCB1 per role with the textbook constant
//! √2 on values in 0..1; one random playout per new node; no solver, no
//! node pool, no threads.

use crate::machine::MachineError;
use crate::rng::Rng;
use crate::simulate::Simulator;
use rustc_hash::FxHashMap;
use std::time::Instant;

struct Node<S, Mv> {
    state: S,
    terminal: bool,
    /// Legal moves per role.
    moves: Vec<Vec<Mv>>,
    /// Per role, per move: visits and summed value.
    stats: Vec<Vec<(u32, f64)>>,
    visits: u32,
    /// Child per joint move (move indices per role).
    children: FxHashMap<Vec<u16>, u32>,
}

pub struct PlainUct<M: Simulator>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    m: M,
    nodes: Vec<Node<M::State, M::Move>>,
    rng: Rng,
    goals: Vec<f64>,
}

const C: f64 = std::f64::consts::SQRT_2;

impl<M: Simulator> PlainUct<M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    pub fn new(m: M, root: M::State, seed: u64) -> Result<Self, MachineError> {
        let roles = m.roles().len();
        let mut u = PlainUct { m, nodes: Vec::new(), rng: Rng::new(seed), goals: vec![0.0; roles] };
        u.set_root(root)?;
        Ok(u)
    }

    pub fn machine(&mut self) -> &mut M {
        &mut self.m
    }

    /// Starts a new tree at `state`.
    pub fn set_root(&mut self, state: M::State) -> Result<(), MachineError> {
        self.nodes.clear();
        self.add(state)?;
        Ok(())
    }

    fn add(&mut self, state: M::State) -> Result<u32, MachineError> {
        let terminal = self.m.is_terminal(&state)?;
        let roles = self.m.roles().len();
        let mut moves = Vec::with_capacity(roles);
        if !terminal {
            for r in 0..roles {
                let mut v = Vec::new();
                self.m.legal_moves(&state, r, &mut v)?;
                if v.is_empty() {
                    return Err(MachineError::NoLegalMove { role: Some(self.m.roles()[r].clone()) });
                }
                if v.len() > u16::MAX as usize {
                    let role = self.m.roles()[r].clone();
                    return Err(MachineError::TooManyMoves { role, moves: v.len(), max: u16::MAX as usize });
                }
                moves.push(v);
            }
        }
        let stats = moves.iter().map(|v| vec![(0, 0.0); v.len()]).collect();
        self.nodes.push(Node { state, terminal, moves, stats, visits: 0, children: FxHashMap::default() });
        Ok(self.nodes.len() as u32 - 1)
    }

    /// Goals of a terminal state, 0..1.
    fn value_of(&mut self, s: &M::State) -> Result<Vec<f64>, MachineError> {
        (0..self.goals.len()).map(|r| Ok(self.m.goal(s, r)?.score() as f64 / 100.0)).collect()
    }

    fn iterate(&mut self) -> Result<(), MachineError> {
        let mut path: Vec<(u32, Vec<u16>)> = Vec::new();
        let mut n = 0u32;
        let value = loop {
            let node = &self.nodes[n as usize];
            if node.terminal {
                let s = node.state.clone();
                break self.value_of(&s)?;
            }
            let ln = (node.visits.max(1) as f64).ln();
            let key: Vec<u16> = node
                .stats
                .iter()
                .map(|st| {
                    let mut best = (f64::NEG_INFINITY, 0u16);
                    for (i, &(v, sum)) in st.iter().enumerate() {
                        // Unvisited moves first, ties broken at random.
                        let u = if v == 0 {
                            1e9 + self.rng.below(1000) as f64
                        } else {
                            sum / v as f64 + C * (ln / v as f64).sqrt()
                        };
                        if u > best.0 {
                            best = (u, i as u16);
                        }
                    }
                    best.1
                })
                .collect();
            if let Some(&c) = node.children.get(&key) {
                path.push((n, key));
                n = c;
                continue;
            }
            let joint: Vec<M::Move> = key.iter().enumerate().map(|(r, &i)| node.moves[r][i as usize]).collect();
            let s = node.state.clone();
            let next = self.m.next_state(&s, &joint)?;
            let child = self.add(next.clone())?;
            self.nodes[n as usize].children.insert(key.clone(), child);
            path.push((n, key));
            let v = if self.nodes[child as usize].terminal {
                self.value_of(&next)?
            } else {
                let mut goals = std::mem::take(&mut self.goals);
                self.m.rollout(&next, &mut self.rng, &mut goals)?;
                let v = goals.iter().map(|g| g / 100.0).collect();
                self.goals = goals;
                v
            };
            self.nodes[child as usize].visits += 1;
            break v;
        };
        for (n, key) in path {
            let node = &mut self.nodes[n as usize];
            node.visits += 1;
            for (r, &i) in key.iter().enumerate() {
                let st = &mut node.stats[r][i as usize];
                st.0 += 1;
                st.1 += value[r];
            }
        }
        Ok(())
    }

    /// Searches until `deadline`; returns the iterations done.
    pub fn run(&mut self, deadline: Instant) -> Result<u64, MachineError> {
        let mut it = 0;
        if self.nodes[0].terminal {
            return Ok(0);
        }
        while Instant::now() < deadline {
            for _ in 0..8 {
                self.iterate()?;
                it += 1;
            }
        }
        Ok(it)
    }

    /// `role`'s most visited move at the root, with its mean value and visits.
    pub fn best(&self, role: usize) -> Option<(M::Move, f64, u32)> {
        let root = self.nodes.first()?;
        let st = root.stats.get(role)?;
        let (i, &(v, sum)) = st.iter().enumerate().max_by_key(|(_, s)| s.0)?;
        Some((root.moves[role][i], sum / v.max(1) as f64, v))
    }

    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }
}
