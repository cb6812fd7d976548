//! perft: count the joint-move paths of each length from the initial state.
//! A terminal state is counted (in `terminal` too) at the depth where it is
//! reached and not expanded; joint moves are the cartesian product of each
//! role's legal moves, roles in declaration order.

use crate::machine::{MachineError, StateMachine};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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

/// Runs perft to `depth`. `progress` is called with the number of states
/// visited so far, now and then.
pub fn perft<M: StateMachine>(
    m: &mut M,
    depth: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<Perft, MachineError> {
    let mut out = Perft {
        lines: (0..=depth)
            .map(|d| PerftLine {
                depth: d,
                ..Default::default()
            })
            .collect(),
        dead_ends: 0,
    };
    let roles = m.roles().len();
    let mut stack = vec![(m.initial_state()?, 0usize)];
    let mut legal: Vec<Vec<M::Move>> = vec![Vec::new(); roles];
    let mut visited = 0u64;
    while let Some((s, d)) = stack.pop() {
        visited += 1;
        if visited % 4096 == 0 {
            progress(visited);
        }
        out.lines[d].nodes += 1;
        if m.is_terminal(&s)? {
            out.lines[d].terminal += 1;
            continue;
        }
        if d == depth {
            continue;
        }
        for (r, l) in legal.iter_mut().enumerate() {
            m.legal_moves(&s, r, l)?;
        }
        if legal.iter().any(|l| l.is_empty()) {
            out.dead_ends += 1;
            continue;
        }
        let idx: Vec<Vec<usize>> = legal.iter().map(|l| (0..l.len()).collect()).collect();
        let mut joints: Vec<Vec<M::Move>> = Vec::new();
        for_each_joint(&idx, &mut |j| {
            joints.push(j.iter().zip(&legal).map(|(&i, l)| l[i]).collect())
        });
        for j in joints {
            let next = m.next_state(&s, &j)?;
            stack.push((next, d + 1));
        }
    }
    progress(visited);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
