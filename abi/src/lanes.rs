//! The plan of the bit-parallel playout code: 128 playouts at once, one
//! bit per playout ("lane") in each 16-byte word (two `u64`s, lanes 0-63
//! in the first), one word per component. The plan says where each base,
//! input, legal, goal and terminal word lies, so that a driver can choose
//! the lanes' moves, end their games and read their goals.

/// Playouts per word.
pub const LANES: usize = 128;

/// Marks an encoded plan (and its version).
const PLAN_MAGIC: u32 = 0x4c41_4e01;

/// The most lane words a plan may ask for: 512 MiB of lane memory, far
/// above the largest network code is generated for.
pub const MAX_WORDS: u32 = 1 << 25;

/// Where the runtime finds each output in the lane words.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LanePlan {
    /// Words of lane memory.
    pub words: u32,
    pub terminal: u32,
    /// Words that hold all ones (the TRUE constant); every other word
    /// starts at zero.
    pub ones: Vec<u32>,
    /// Per base: its word, and the word of its next-state output.
    pub base: Vec<u32>,
    pub next: Vec<u32>,
    /// Per input: its word, and the word of its legal output.
    pub input: Vec<u32>,
    pub legal: Vec<u32>,
    /// (role, value, word) per goal output.
    pub goals: Vec<(u32, u32, u32)>,
    /// Whether `propel_lanes_goals` must run before goals are read.
    pub goal_net: bool,
}

/// Why a plan was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("the lane plan is cut short or has no marker")]
    Malformed,
    #[error("the lane plan asks for {0} words (at most {MAX_WORDS})")]
    TooLarge(u32),
    #[error("the lane plan names a word outside its {0} words")]
    WordOutOfRange(u32),
    #[error("the lane plan has {found} {what} for {expected}")]
    Count { what: &'static str, found: usize, expected: usize },
    #[error("the lane plan gives a goal to role {0}, which does not exist")]
    Role(u32),
    #[error("the lane plan gives a goal value {0} (at most 255)")]
    Value(u32),
}

impl LanePlan {
    pub fn encode(&self) -> Vec<u32> {
        let mut v = vec![PLAN_MAGIC, self.words, self.terminal, self.goal_net as u32];
        let list = |v: &mut Vec<u32>, xs: &[u32]| {
            v.push(xs.len() as u32);
            v.extend_from_slice(xs);
        };
        list(&mut v, &self.ones);
        list(&mut v, &self.base);
        list(&mut v, &self.next);
        list(&mut v, &self.input);
        list(&mut v, &self.legal);
        v.push(self.goals.len() as u32);
        for &(r, val, w) in &self.goals {
            v.extend_from_slice(&[r, val, w]);
        }
        v
    }

    /// Decodes and checks a plan on its own: every word index in range,
    /// as many next words as bases and legal words as inputs, goal values
    /// up to 255 (above 100 where the rules give one GDL does not allow), at most [`MAX_WORDS`] words. Allocates no more than the
    /// input's size, whatever it says.
    pub fn decode(v: &[u32]) -> Result<LanePlan, PlanError> {
        let mut it = v.iter().copied();
        let mut next = || it.next().ok_or(PlanError::Malformed);
        if next()? != PLAN_MAGIC {
            return Err(PlanError::Malformed);
        }
        let words = next()?;
        if words > MAX_WORDS {
            return Err(PlanError::TooLarge(words));
        }
        let terminal = next()?;
        let goal_net = next()? != 0;
        let mut rest = &v[4..];
        let mut list = || -> Result<Vec<u32>, PlanError> {
            let (&n, tail) = rest.split_first().ok_or(PlanError::Malformed)?;
            let xs = tail.get(..n as usize).ok_or(PlanError::Malformed)?;
            rest = &tail[n as usize..];
            match xs.iter().find(|&&w| w >= words) {
                Some(_) => Err(PlanError::WordOutOfRange(words)),
                None => Ok(xs.to_vec()),
            }
        };
        let ones = list()?;
        let base = list()?;
        let next = list()?;
        let input = list()?;
        let legal = list()?;
        let (&ng, tail) = rest.split_first().ok_or(PlanError::Malformed)?;
        let triples = tail.get(..3 * ng as usize).filter(|t| t.len() == tail.len()).ok_or(PlanError::Malformed)?;
        let mut goals = Vec::with_capacity(ng as usize);
        for t in triples.chunks_exact(3) {
            let (r, val, w) = (t[0], t[1], t[2]);
            if w >= words {
                return Err(PlanError::WordOutOfRange(words));
            }
            if val > 255 {
                return Err(PlanError::Value(val));
            }
            goals.push((r, val, w));
        }
        if terminal >= words {
            return Err(PlanError::WordOutOfRange(words));
        }
        if base.len() != next.len() {
            return Err(PlanError::Count { what: "next-state words", found: next.len(), expected: base.len() });
        }
        if input.len() != legal.len() {
            return Err(PlanError::Count { what: "legal words", found: legal.len(), expected: input.len() });
        }
        Ok(LanePlan { words, terminal, ones, base, next, input, legal, goals, goal_net })
    }

    /// Checks the plan against the machine it runs for: a word per base and
    /// per input, goals of existing roles.
    pub fn check(&self, roles: usize, bases: usize, inputs: usize) -> Result<(), PlanError> {
        if self.base.len() != bases {
            return Err(PlanError::Count { what: "base words", found: self.base.len(), expected: bases });
        }
        if self.input.len() != inputs {
            return Err(PlanError::Count { what: "input words", found: self.input.len(), expected: inputs });
        }
        match self.goals.iter().find(|g| g.0 as usize >= roles) {
            Some(g) => Err(PlanError::Role(g.0)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> LanePlan {
        LanePlan {
            words: 10,
            terminal: 3,
            ones: vec![1],
            base: vec![4, 5],
            next: vec![6, 4],
            input: vec![7],
            legal: vec![1],
            goals: vec![(0, 100, 8)],
            goal_net: true,
        }
    }

    #[test]
    fn plan_round_trips_and_rejects_bad_words() {
        let p = plan();
        let v = p.encode();
        assert_eq!(LanePlan::decode(&v), Ok(p.clone()));
        let mut bad = v.clone();
        bad[2] = 10;
        assert_eq!(LanePlan::decode(&bad), Err(PlanError::WordOutOfRange(10)));
        assert!(LanePlan::decode(&v[..v.len() - 1]).is_err());
        assert!(LanePlan::decode(&[]).is_err());
        let mut long = v.clone();
        long.push(0);
        assert!(LanePlan::decode(&long).is_err());
    }

    #[test]
    fn huge_counts_are_refused_without_allocating() {
        let mut v = plan().encode();
        v[1] = u32::MAX;
        assert_eq!(LanePlan::decode(&v), Err(PlanError::TooLarge(u32::MAX)));
        let mut v = plan().encode();
        let goals_at = v.len() - 4;
        v[goals_at] = u32::MAX;
        assert_eq!(LanePlan::decode(&v), Err(PlanError::Malformed));
        let mut v = plan().encode();
        v[4] = u32::MAX;
        assert_eq!(LanePlan::decode(&v), Err(PlanError::Malformed));
    }

    #[test]
    fn checked_against_the_machine() {
        let p = plan();
        assert!(p.check(1, 2, 1).is_ok());
        assert!(p.check(1, 3, 1).is_err());
        assert!(p.check(1, 2, 2).is_err());
        assert_eq!(p.check(0, 2, 1), Err(PlanError::Role(0)));
    }
}
