//! One step of the lanes, as `Lanes::stream` takes it: each role's moves
//! drawn, forced moves played, finished lanes read and refilled, the
//! bases advanced.

use super::*;

/// The look-ahead's finds of one round (`round`: each input tried and its
/// lanes; `found`: the lanes where it did what is looked for): each input
/// found in some lane joins `inputs` once, and its lanes join `masks` at
/// its legal word.
pub(super) fn mark_round(round: &[(u32, Word)], legal: &[u32], found: Word, masks: &mut [Word], inputs: &mut Vec<u32>) {
    if found == 0 {
        return;
    }
    for &(i, p) in round {
        let at = legal[i as usize] as usize;
        if p & found != 0 {
            if masks[at] == 0 {
                inputs.push(i);
            }
            masks[at] |= p & found;
        }
    }
}

/// Every base of `words` takes its next-state word (`direct` in place;
/// `aliased` through `next`, since another base's word is read), except
/// in the `parked` lanes.
pub(super) fn advance_words(
    words: &mut [Word],
    next: &mut [Word],
    direct: &[(u32, u32)],
    aliased: &[(u32, u32)],
    parked: Word,
) {
    for (x, &(n, _)) in next.iter_mut().zip(aliased.iter()) {
        *x = words[n as usize];
    }
    if parked == 0 {
        for &(n, b) in direct.iter() {
            words[b as usize] = words[n as usize];
        }
        for (&x, &(_, b)) in next.iter().zip(aliased.iter()) {
            words[b as usize] = x;
        }
        return;
    }
    let blend = |old: &mut Word, x: Word| *old = (x & !parked) | (*old & parked);
    for &(n, b) in direct.iter() {
        let x = words[n as usize];
        blend(&mut words[b as usize], x);
    }
    for (&x, &(_, b)) in next.iter().zip(aliased.iter()) {
        blend(&mut words[b as usize], x);
    }
}

impl Lanes {
    /// One role's move in every lane of `live`, drawn uniformly among the
    /// lane's legal inputs ([`choose::choose`]), written into the input
    /// words; in the lanes where a win-first input of the role is legal,
    /// uniformly among those instead. The role's legal words (the
    /// candidates) are gathered first, copied in one run from the dense
    /// run that generated code writes.
    ///
    /// For each lane of `fresh`, also records its legal inputs of role
    /// `role` (of `roles`) in `fresh_moves`, in ascending order.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn choose(
        &mut self,
        plan: &LanePlan,
        inputs: std::ops::Range<usize>,
        live: Word,
        fresh: Word,
        role: usize,
        roles: usize,
        rng: &mut Rng,
    ) -> Result<(), LaneError> {
        let Lanes {
            words,
            cands,
            played,
            dense_legal,
            fresh_moves,
            scratch,
            win,
            win_cands,
            safe,
            safe_state,
            decisive,
            capture,
            cap_cands,
            ..
        } = self;
        if live == 0 {
            return Ok(());
        }
        // Capture-first: the lanes without a win but with a capture
        // legal (not one safe-first took back: the masks were found
        // before), each kept with the chance set.
        let (mut capturing, mut caps, mut chance) = (0 as Word, 0..0, 1.0);
        if let Some(c) = capture.as_mut() {
            caps = c.caps.partition_point(|&i| (i as usize) < inputs.start)
                ..c.caps.partition_point(|&i| (i as usize) < inputs.end);
            for &i in &c.caps[caps.clone()] {
                let at = plan.legal[i as usize] as usize;
                c.masks[at] &= words[at];
                capturing |= c.masks[at];
            }
            capturing &= live;
            chance = c.chance;
        }
        // Win-first: the lanes with a winning input legal (an OR of its
        // legal words; nothing at all when the set is empty). They draw
        // among those; the others (`rest`) among all their legal inputs.
        // Decisive lanes: the inputs the look-ahead found winning, each
        // with its own lanes (`masks`, at the legal words).
        let (mut wins, mut winning) = (&[][..], 0 as Word);
        let mut masks: &[Word] = words;
        if let Some(d) = decisive.as_deref() {
            let lo = d.wins.partition_point(|&i| (i as usize) < inputs.start);
            let hi = d.wins.partition_point(|&i| (i as usize) < inputs.end);
            wins = &d.wins[lo..hi];
            winning = wins.iter().fold(0, |a, &i| a | d.masks[plan.legal[i as usize] as usize]) & live;
            masks = &d.masks;
        } else if !win.is_empty() {
            let lo = win.partition_point(|&i| (i as usize) < inputs.start);
            let hi = win.partition_point(|&i| (i as usize) < inputs.end);
            wins = &win[lo..hi];
            winning = wins.iter().fold(0, |a, &i| a | words[plan.legal[i as usize] as usize]) & live;
        }
        capturing &= !winning;
        if capturing != 0 && chance < 1.0 {
            // 2^-24 steps are fine enough for a chance; one draw per lane.
            let keep = (chance * (1u64 << 24) as f64) as usize;
            each_lane(capturing, |l| {
                if rng.below(1 << 24) >= keep {
                    capturing &= !LANE_BIT[l];
                }
            });
        }
        let rest = live & !winning & !capturing;
        let first = inputs.start as u32;
        let run = plan.legal.get(inputs.start).filter(|_| *dense_legal);
        match run.and_then(|&at| words.get(at as usize..at as usize + inputs.len())) {
            Some(run) => cands.fill(first, run, rest),
            None => cands.gather(first, words, &plan.legal[inputs.clone()], rest),
        }
        if cands.any != rest {
            return Err(LaneError::NoLegalMove);
        }
        each_lane(fresh, |l| {
            let moves = &mut fresh_moves[l * roles + role];
            moves.clear();
            if (winning | capturing) >> l & 1 == 0 {
                moves.extend(cands.of_lane(l));
            } else {
                // Not among the candidates (a lane that expanded a
                // node: rare): read from the legal words.
                let legal = |&i: &usize| words[plan.legal[i] as usize] >> l & 1 == 1;
                moves.extend(inputs.clone().filter(legal).map(|i| i as u32));
            }
        });
        if winning != 0 {
            win_cands.pick_out(wins, masks, &plan.legal, winning);
        }
        if let Some(c) = capture.as_ref().filter(|_| capturing != 0) {
            cap_cands.pick_out(&c.caps[caps], &c.masks, &plan.legal, capturing);
        }
        let log = if *safe { Some(&mut safe_state.chosen) } else { None };
        let mut out = choose::Moves { words, played, at: &plan.input, log };
        if winning != 0 {
            choose::choose(win_cands, winning, rng, &mut out, scratch);
        }
        if capturing != 0 {
            choose::choose(cap_cands, capturing, rng, &mut out, scratch);
        }
        if rest != 0 {
            choose::choose(cands, rest, rng, &mut out, scratch);
        }
        Ok(())
    }

    /// Writes the given joint move of each lane in `forced`.
    pub(super) fn play_forced(&mut self, plan: &LanePlan, forced: Word, roles: usize) {
        let mut f = forced;
        while f != 0 {
            let l = f.trailing_zeros() as usize;
            f &= f - 1;
            for &j in &self.joint[l * roles..(l + 1) * roles] {
                let at = plan.input[j as usize];
                self.words[at as usize] |= LANE_BIT[l];
                self.played.push(at);
            }
        }
    }

    /// Clears the input words written last step.
    pub(super) fn clear_inputs(&mut self) {
        for w in self.played.drain(..) {
            self.words[w as usize] = 0;
        }
    }

    /// Tells `source` the state of each lane in `lanes` (children of
    /// [`Refill::Expand`]), terminal or with its legal inputs.
    pub(super) fn report_children(
        &mut self,
        plan: &LanePlan,
        lanes: Word,
        terminal: bool,
        roles: usize,
        source: &mut impl LaneSource,
    ) {
        let mut f = lanes;
        while f != 0 {
            let l = f.trailing_zeros() as usize;
            f &= f - 1;
            let (h, b) = (l / 64, l % 64);
            let halves: &[u64] = bytemuck::cast_slice(&self.words[..]);
            self.child.clear();
            self.child.extend(plan.base.chunks(64).map(|ws| {
                ws.iter().enumerate().fold(0u64, |x, (i, &w)| x | (halves[2 * w as usize + h] >> b & 1) << i)
            }));
            let legal = if terminal { &[][..] } else { &self.fresh_moves[l * roles..(l + 1) * roles] };
            source.expanded(l, &self.child, terminal, legal);
        }
    }

    /// Reports the lanes in `ended` (each terminal, in its current state,
    /// since step `ended_at`) to `source`.
    pub(super) fn finish(
        &mut self,
        plan: &LanePlan,
        eval: &mut impl LaneEval,
        ended: Word,
        source: &mut impl LaneSource,
    ) -> Result<(), LaneError> {
        // Parked lanes must still hold their terminal state.
        debug_assert_eq!(self.words[plan.terminal as usize] & ended, ended, "a lane left its terminal state");
        if plan.goal_net {
            eval.goals(&mut self.words);
        }
        let mut e = ended;
        while e != 0 {
            let l = e.trailing_zeros() as usize;
            e &= e - 1;
            for g in &mut self.goals {
                *g = -1;
            }
            for &(role, value, w) in &plan.goals {
                if self.words[w as usize] >> l & 1 == 1 {
                    let g = &mut self.goals[role as usize];
                    *g = (*g).max(value as i32);
                }
            }
            if let Some((role, &value)) =
                self.goals.iter().enumerate().find(|&(_, &g)| g > i32::from(crate::machine::GOAL_MAX))
            {
                return Err(LaneError::BadGoal { role: role as u32, value });
            }
            if let Some(log) = &mut self.moves {
                log.report(l, source);
            }
            source.finished(l, &self.goals, self.ended_at[l] - self.started[l]);
        }
        Ok(())
    }

    /// Every base takes its next-state word, except in the `parked` lanes
    /// (which keep their terminal state until their goals are read).
    pub(super) fn advance(&mut self, parked: Word) {
        let Lanes { words, next, direct, aliased, .. } = self;
        advance_words(words, next, direct, aliased, parked);
    }
}
