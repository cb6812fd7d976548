//! perft: count the joint-move paths of each length from the initial state.
//! A terminal state is counted (in `terminal` too) at the depth where it is
//! reached and not expanded; joint moves are the cartesian product of each
//! role's legal moves, roles in declaration order.

use crate::machine::{MachineError, StateMachine};

/// One depth's counts; serialised as `propel perft` writes it
/// (docs/formats.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PerftLine {
    pub depth: usize,
    pub nodes: u64,
    pub terminal: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Perft {
    pub lines: Vec<PerftLine>,
    /// Non-terminal states in which some role had no legal move (they have
    /// no successors; the game is broken there).
    pub dead_ends: u64,
}

/// Calls `f` with every joint move (one index per role into `moves[role]`),
/// in lexicographic order of the role-ordered index tuples.
pub fn for_each_joint(moves: &[Vec<usize>], f: &mut impl FnMut(&[usize])) {
    if moves.iter().any(|m| m.is_empty()) {
        return;
    }
    let mut idx = vec![0usize; moves.len()];
    let mut joint: Vec<usize> = moves.iter().map(|m| m[0]).collect();
    loop {
        f(&joint);
        let mut r = moves.len();
        loop {
            if r == 0 {
                return;
            }
            r -= 1;
            idx[r] += 1;
            if idx[r] < moves[r].len() {
                joint[r] = moves[r][idx[r]];
                break;
            }
            idx[r] = 0;
            joint[r] = moves[r][0];
        }
    }
}

/// One expanded state on the depth-first stack: its legal moves, the next
/// joint move to try (an odometer over the roles' move lists) and the
/// successors made but not visited yet. Successors are made
/// [`CHILDREN_AT_ONCE`] at a time, never all at once: a machine that keeps
/// one state loaded (the prover) then evaluates the parent once per
/// batch, not again after every child's terminal test.
struct Frame<S, M> {
    state: S,
    depth: usize,
    legal: Vec<Vec<M>>,
    odometer: Vec<usize>,
    done: bool,
    /// Made successors, last to visit first.
    children: Vec<S>,
}

/// Successors made in one go while their parent is loaded.
const CHILDREN_AT_ONCE: usize = 256;

/// Runs perft to `depth`. `progress` is called with the number of states
/// visited so far, now and then. Memory grows with depth (at most
/// 256 states a level), not with the number of joint moves.
pub fn perft<M: StateMachine>(m: &mut M, depth: usize, progress: &mut dyn FnMut(u64)) -> Result<Perft, MachineError> {
    let mut out =
        Perft { lines: (0..=depth).map(|d| PerftLine { depth: d, ..Default::default() }).collect(), dead_ends: 0 };
    let roles = m.roles().len();
    let mut visited = 0u64;
    let mut stack: Vec<Frame<M::State, M::Move>> = Vec::new();
    let mut pending = Some((m.initial_state()?, 0usize));
    let mut joint = Vec::with_capacity(roles);
    loop {
        // Count (and maybe expand) a newly reached state.
        if let Some((s, d)) = pending.take() {
            visited += 1;
            if visited.is_multiple_of(4096) {
                progress(visited);
            }
            out.lines[d].nodes += 1;
            if m.is_terminal(&s)? {
                out.lines[d].terminal += 1;
            } else if d < depth {
                let mut legal = vec![Vec::new(); roles];
                for (r, l) in legal.iter_mut().enumerate() {
                    m.legal_moves(&s, r, l)?;
                }
                if legal.iter().any(|l| l.is_empty()) {
                    out.dead_ends += 1;
                } else {
                    stack.push(Frame {
                        state: s,
                        depth: d,
                        legal,
                        odometer: vec![0; roles],
                        done: false,
                        children: Vec::new(),
                    });
                }
            }
        }
        let Some(top) = stack.last_mut() else { break };
        if let Some(next) = top.children.pop() {
            pending = Some((next, top.depth + 1));
            continue;
        }
        if top.done {
            stack.pop();
            continue;
        }
        let mut made = Vec::new();
        while !top.done && made.len() < CHILDREN_AT_ONCE {
            joint.clear();
            joint.extend(top.odometer.iter().zip(&top.legal).map(|(&i, l)| l[i]));
            // Advance the odometer, last role fastest (role-ordered lexicographic order).
            let mut r = roles;
            loop {
                if r == 0 {
                    top.done = true;
                    break;
                }
                r -= 1;
                top.odometer[r] += 1;
                if top.odometer[r] < top.legal[r].len() {
                    break;
                }
                top.odometer[r] = 0;
            }
            made.push(m.next_state(&top.state, &joint)?);
        }
        made.reverse();
        top.children = made;
    }
    progress(visited);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A game of 300 moves a state that never ends, which counts how often
    /// a call concerns another state than the last call did (what a machine
    /// with one loaded state, like the prover, pays for).
    struct Wide {
        roles: Vec<String>,
        last: Option<u64>,
        loads: usize,
    }

    impl Wide {
        fn touch(&mut self, s: u64) {
            if self.last != Some(s) {
                self.loads += 1;
                self.last = Some(s);
            }
        }
    }

    impl StateMachine for Wide {
        type State = u64;
        type Move = u64;
        fn roles(&self) -> &[String] {
            &self.roles
        }
        fn initial_state(&mut self) -> Result<u64, MachineError> {
            Ok(1)
        }
        fn is_terminal(&mut self, s: &u64) -> Result<bool, MachineError> {
            self.touch(*s);
            Ok(false)
        }
        fn legal_moves(&mut self, s: &u64, _: usize, out: &mut Vec<u64>) -> Result<(), MachineError> {
            self.touch(*s);
            *out = (0..300).collect();
            Ok(())
        }
        fn next_state(&mut self, s: &u64, joint: &[u64]) -> Result<u64, MachineError> {
            self.touch(*s);
            Ok(s * 1000 + joint[0] + 1)
        }
        fn goal_values(&mut self, _: &u64, _: usize, out: &mut Vec<u8>) -> Result<(), MachineError> {
            *out = vec![0];
            Ok(())
        }
        fn state_kif(&mut self, s: &u64) -> Vec<String> {
            vec![s.to_string()]
        }
        fn move_kif(&self, m: u64) -> String {
            m.to_string()
        }
    }

    #[test]
    fn successors_are_made_in_batches_while_their_parent_is_loaded() {
        let mut m = Wide { roles: vec!["r".into()], last: None, loads: 0 };
        let p = perft(&mut m, 1, &mut |_| {}).unwrap();
        assert_eq!(p.lines[1].nodes, 300);
        // The root, its 300 children, and the root once more for the
        // second batch; one successor at a time reloaded the root for
        // every child (600).
        assert_eq!(m.loads, 1 + 300 + 1);
    }

    #[test]
    fn cartesian_product_in_role_order() {
        let mut seen = Vec::new();
        for_each_joint(&[vec![0, 1], vec![5, 6, 7]], &mut |j| seen.push(j.to_vec()));
        assert_eq!(seen.len(), 6);
        assert_eq!(seen[0], [0, 5]);
        assert_eq!(seen[1], [0, 6]);
        assert_eq!(seen[5], [1, 7]);
        let mut n = 0;
        for_each_joint(&[vec![0], vec![]], &mut |_| n += 1);
        assert_eq!(n, 0);
    }
}
