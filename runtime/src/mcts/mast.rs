//! MAST, the move-average sampling technique (Finnsson and Björnsson,
//! CadiaPlayer): every move (an input of the network, so a role's move)
//! keeps the mean outcome, for the role that played it, of the iterations
//! that played it, in the tree or in the rollout; rollouts then play the
//! move with the best mean, or with probability `epsilon` a random one
//! (the ε-greedy form, which Tak, Winands and Björnsson found better than
//! a Gibbs distribution across GGP games).

use crate::rng::Rng;
use crate::simulate::{Pick, Simulator};

#[derive(Clone, Debug)]
pub struct Mast {
    /// Per move index: summed values and the number of them.
    sums: Vec<f32>,
    counts: Vec<f32>,
    /// Share of random moves (0..1).
    epsilon: f64,
}

impl Mast {
    pub fn new(epsilon: f64) -> Mast {
        Mast { sums: Vec::new(), counts: Vec::new(), epsilon: epsilon.clamp(0.0, 1.0) }
    }

    /// Move `i`'s mean value for the role that plays it; an untried move
    /// is taken to be as good as a win, so that it gets tried.
    fn mean(&self, i: usize) -> f32 {
        match self.counts.get(i) {
            Some(&n) if n > 0.0 => self.sums[i] / n,
            _ => 1.0,
        }
    }

    /// Adds the iteration's values (0..1 per role) to the moves it played.
    pub fn update<M: Simulator>(&mut self, m: &M, played: &[(usize, M::Move)], values: &[f64])
    where
        M::State: Send + Sync,
        M::Move: Send + Sync,
    {
        for &(role, mv) in played {
            let Some(i) = m.move_index(mv).map(|i| i as usize) else { continue };
            if i >= self.sums.len() {
                self.sums.resize(i + 1, 0.0);
                self.counts.resize(i + 1, 0.0);
            }
            self.sums[i] += values.get(role).copied().unwrap_or(0.0) as f32;
            self.counts[i] += 1.0;
        }
    }

    /// Weighs what was learnt so far by `keep` (0..1) against what comes:
    /// between turns, as the positions the moves are played in change.
    pub fn decay(&mut self, keep: f32) {
        for (s, n) in self.sums.iter_mut().zip(&mut self.counts) {
            *s *= keep;
            *n *= keep;
        }
    }
}

impl<M: Simulator> Pick<M> for Mast
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    fn pick(&mut self, m: &M, _role: usize, moves: &[M::Move], rng: &mut Rng) -> usize {
        if moves.len() < 2 || (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) < self.epsilon {
            return rng.below(moves.len());
        }
        // The best mean, ties to a random one (from a random offset).
        let start = rng.below(moves.len());
        let mut best = (start, f32::NEG_INFINITY);
        for k in 0..moves.len() {
            let i = (start + k) % moves.len();
            let q = m.move_index(moves[i]).map_or(1.0, |x| self.mean(x as usize));
            if q > best.1 {
                best = (i, q);
            }
        }
        best.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::StateMachine;

    /// The bundled tic-tac-toe on the interpreted propnet.
    fn tictactoe() -> crate::propnet::PropnetMachine {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../games/tictactoe.kif");
        let game = std::sync::Arc::new(propel_compiler::load_file(&root).expect("tictactoe"));
        crate::build::prepare(&game, &crate::build::BuildOptions::default()).expect("built").propnet()
    }

    #[test]
    fn greedy_picks_follow_the_means() {
        let mut m = tictactoe();
        let s = m.initial_state().unwrap();
        let mut moves = Vec::new();
        m.legal_moves(&s, 0, &mut moves).unwrap();
        let mut mast = Mast::new(0.0);
        // Every move tried once: all lose but the fourth.
        let played: Vec<(usize, u32)> = moves.iter().map(|&mv| (0, mv)).collect();
        mast.update(&m, &played, &[0.0, 1.0]);
        mast.update(&m, &[(0, moves[3])], &[1.0, 0.0]);
        let mut rng = Rng::new(5);
        for _ in 0..20 {
            assert_eq!(mast.pick(&m, 0, &moves, &mut rng), 3);
        }
        // Decay keeps the means.
        mast.decay(0.5);
        assert_eq!(mast.pick(&m, 0, &moves, &mut rng), 3);
        // All random with epsilon 1: every move comes up.
        let mut all = Mast::new(1.0);
        all.update(&m, &played, &[0.0, 1.0]);
        let mut seen = vec![false; moves.len()];
        for _ in 0..500 {
            seen[all.pick(&m, 0, &moves, &mut rng)] = true;
        }
        assert!(seen.iter().all(|&x| x));
    }
}
