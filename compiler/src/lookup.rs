//! Outputs left to a lookup on the rules.
//!
//! Some games are written so that their goal or terminal test is small for
//! a top-down prover and huge when ground: sudoku's `victoryState` tests
//! 27 groups of nine cells as permutations of 1..9 (9! ground rules per
//! group), laikLee_hex's `line` follows every simple path of the board as
//! a list. Their legal and next-state logic grounds in no time. Such a
//! game is built without those outputs, and its machine answers them from
//! the state by evaluating the rules (the runtime's lookup machine): one
//! evaluation per state asked, where the network would have evaluated the
//! output at every state change.
//!
//! Only `goal` and `terminal` can be left out this way. `legal` and `next`
//! are what the network is for, and a machine whose every step went
//! through the rules would be the prover under another name.

use crate::game::{Game, RelId};
use crate::ground::GroundError;

/// What a network leaves to the rules (nothing by default): its goal or
/// terminal output, or questions its rules ask of the state
/// ([`crate::queries`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lookups {
    pub goal: bool,
    pub terminal: bool,
    /// The network has query components: its machine answers them from
    /// the state with the top-down evaluator.
    pub questions: bool,
}

impl Lookups {
    pub fn any(self) -> bool {
        self.goal || self.terminal || self.questions
    }

    /// Both sets together.
    pub fn union(self, other: Lookups) -> Lookups {
        Lookups {
            goal: self.goal || other.goal,
            terminal: self.terminal || other.terminal,
            questions: self.questions || other.questions,
        }
    }

    /// What is left to the rules, in words (`goal`, `terminal`, `goal and
    /// terminal`, `questions`; empty for nothing).
    pub fn describe(self) -> &'static str {
        match (self.goal, self.terminal, self.questions) {
            (_, _, true) => "questions",
            (true, true, _) => "goal and terminal",
            (true, false, _) => "goal",
            (false, true, _) => "terminal",
            (false, false, false) => "",
        }
    }
}

/// The outputs to leave to lookups after grounding `game` failed with
/// `error`: those of `goal` and `terminal` that depend on the relation the
/// error names. `None` when the relation is not one of the game's (a
/// rewrite's own), when `legal`, `next` or `init` need it too, or when
/// neither output does.
pub fn for_failure(game: &Game, error: &GroundError) -> Option<Lookups> {
    let name = crate::names::base_name(error.relation());
    let rel = game.relation_by_name(name)?;
    let kept = game.needed_by(&[RelId::ROLE, RelId::INIT, RelId::LEGAL, RelId::NEXT]);
    if kept[rel.index()] {
        return None;
    }
    let l = Lookups {
        goal: game.needed_by(&[RelId::GOAL])[rel.index()],
        terminal: game.needed_by(&[RelId::TERMINAL])[rel.index()],
        questions: false,
    };
    l.any().then_some(l)
}

/// `game` without the rules of the outputs in `lookups`: grounding then
/// never derives what only they read (relations no output needs are
/// skipped). `None` when nothing is left out.
pub fn without(game: &Game, lookups: Lookups) -> Option<Game> {
    if !lookups.any() {
        return None;
    }
    let dropped = |r: RelId| (lookups.goal && r == RelId::GOAL) || (lookups.terminal && r == RelId::TERMINAL);
    let clauses = game.clauses.iter().filter(|c| !dropped(c.head.rel)).cloned().collect();
    // Dropping rules cannot make a stratified program unstratified.
    crate::strata::rewritten(game, game.symbols.clone(), game.relations.clone(), clauses, game.warnings.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::load;

    const GAME: &str = "
        (role a) (init (c 1)) (succ 1 2) (succ 2 3)
        (<= (legal a (go ?x)) (true (c ?x)))
        (<= (next (c ?y)) (does a (go ?x)) (succ ?x ?y))
        (<= (far ?x) (succ ?x ?y))
        (<= (goal a 100) (true (c 3)) (far 2))
        (<= (goal a 0) (not (true (c 3))))
        (<= terminal (true (c 3)))";

    fn failure(rel: &str) -> GroundError {
        GroundError::TooManyRules { relation: rel.into(), count: 1, limit: 0 }
    }

    #[test]
    fn only_goal_and_terminal_helpers_are_left_to_lookups() {
        let g = load("t.kif", GAME).unwrap();
        assert_eq!(for_failure(&g, &failure("far")), Some(Lookups { goal: true, ..Default::default() }));
        assert_eq!(for_failure(&g, &failure("magic@far@bf")), Some(Lookups { goal: true, ..Default::default() }));
        assert_eq!(for_failure(&g, &failure("terminal")), Some(Lookups { terminal: true, ..Default::default() }));
        // `succ` feeds `next` too: the network cannot do without it.
        assert_eq!(for_failure(&g, &failure("succ")), None);
        assert_eq!(for_failure(&g, &failure("no_such_relation")), None);
    }

    #[test]
    fn a_game_without_its_goal_rules_no_longer_needs_their_helpers() {
        let g = load("t.kif", GAME).unwrap();
        let far = g.relation_by_name("far").unwrap();
        assert!(g.needed_relations()[far.index()]);
        let w = without(&g, Lookups { goal: true, ..Default::default() }).unwrap();
        assert!(!w.needed_relations()[far.index()]);
        assert!(w.clauses.iter().all(|c| c.head.rel != RelId::GOAL));
        assert!(w.clauses.iter().any(|c| c.head.rel == RelId::TERMINAL));
        assert!(without(&g, Lookups::default()).is_none());
    }
}
