//! The rollout policies beside the uniform draw.
//!
//! Win-first lanes ([`Lanes::set_win_first`]): given a set of inputs
//! known to win at once for the role that plays them (the analysis's
//! `winning` moves), a lane where its role has one of them legal plays
//! one of those, drawn uniformly among them; every other lane draws
//! uniformly among all its legal inputs as before. With the set empty
//! nothing changes (not even the random draws).
//!
//! Safe-first lanes ([`Lanes::set_safe_first`], with a win-first set or
//! decisive lanes, whose look-ahead then finds the wins):
//! where a lane's move leaves another role a winning input legal, the lane
//! takes the move back and chooses again among the moves it has not
//! tried, until one leaves no such win, none is left or it has tried
//! `SAFE_TRIES` (the decisive and
//! anti-decisive moves of heavy playouts; Sancho's greedy rollouts do the
//! same by backtracking). A lane that takes a move back sits out one step,
//! so the other lanes never wait for it.
//!
//! Decisive lanes ([`Lanes::set_decisive`]): before each step, every move
//! of a role that has a choice (the others having one legal move each) is
//! played one ply ahead on a copy of the lane memory, and a lane where
//! some move ends the game with the role's win plays one of those, drawn
//! uniformly; the others draw as before. Win-first lanes need moves that
//! win wherever they are legal (breakthrough's last row); this finds the
//! wins of games where no move always wins (four in a row), at the cost
//! of one evaluation of the network per step for each move of the lane
//! with the most moves (each lane tries its first untried move in each
//! round; Teytaud and Teytaud's decisive moves).
//!
//! Capture-first lanes ([`Lanes::set_capture_first`]): a lane with no win
//! but a capture legal plays one, drawn uniformly, with a given chance;
//! the capture-biased playouts of Lorentz and Horey's breakthrough
//! program. The captures are found one of two ways ([`Captures`]): by the
//! decisive look-ahead, which then also notes the moves after which
//! another role has fewer of its pieces (the analysis's material), or
//! from a table of the moves seen to take a piece and where (the
//! analysis's `captures`): a move whose target square holds another
//! role's piece now takes it, one AND per move and no look-ahead.

use super::*;

impl Lanes {
    /// Decisive move choice (see the module comment): each step, the
    /// moves of the role with a choice are tried one ply ahead, and a lane
    /// where one of them wins at once plays one of those. Takes the place
    /// of the win-first inputs while on.
    pub fn set_decisive(&mut self, plan: &LanePlan, on: bool) {
        self.decisive = on.then(|| Box::new(Decisive::new(plan, self.aliased.len())));
        if !on && self.capture.as_ref().is_some_and(|c| c.table.is_empty()) {
            self.capture = None;
        }
    }

    /// Whether decisive move choice is on.
    pub fn decisive(&self) -> bool {
        self.decisive.is_some()
    }

    /// Capture-first move choice (see the module comment): with
    /// `Some((chance, captures))`, a lane whose role to move has no win
    /// but a capture legal plays one with probability `chance` (0..1),
    /// drawn uniformly. [`Captures::LookAhead`] rides on the decisive
    /// look-ahead, which it turns on (a later `set_decisive(false)` turns
    /// both off); [`Captures::Table`] needs none. `None`: off.
    pub fn set_capture_first(&mut self, plan: &LanePlan, capture: Option<(f64, &Captures)>) {
        let Some((chance, captures)) = capture else {
            self.capture = None;
            return;
        };
        let word = |b: &u32| plan.base.get(*b as usize).copied();
        let (foes, table) = match captures {
            Captures::LookAhead(material) => {
                let foes = material.foes().iter().map(|bs| bs.iter().filter_map(word).collect()).collect();
                if self.decisive.is_none() {
                    self.set_decisive(plan, true);
                }
                (foes, Vec::new())
            }
            Captures::Table(t) => {
                let inputs = plan.legal.len() as u32;
                let table = t
                    .iter()
                    .filter(|(i, _)| *i < inputs)
                    .map(|(i, bases)| (*i, bases.iter().filter_map(word).collect::<Vec<u32>>()))
                    .filter(|(_, w)| !w.is_empty())
                    .collect::<CaptureTable>();
                if table.is_empty() {
                    // Nothing to read: off, rather than a look-ahead never asked for.
                    self.capture = None;
                    return;
                }
                (Vec::new(), table)
            }
        };
        self.capture = Some(Capture {
            chance: chance.clamp(0.0, 1.0),
            foes,
            table,
            choosers: Vec::new(),
            masks: vec![0; plan.words as usize],
            caps: Vec::new(),
        });
    }

    /// The chance of capture-first move choice (`None`: off).
    pub fn capture_first(&self) -> Option<f64> {
        self.capture.as_ref().map(|c| c.chance)
    }

    /// Whether capture-first lanes read their captures from a table
    /// ([`Captures::Table`]) rather than the look-ahead.
    pub fn capture_table(&self) -> bool {
        self.capture.as_ref().is_some_and(|c| !c.table.is_empty())
    }

    /// Material-cutoff rollouts: a lane whose playout has run `steps`
    /// steps (at least 2) without ending stops there, and counts as a win
    /// (100 to 0) for the role whose share of the material grew against
    /// the reference state's ([`Material::relative`]), a draw (50 each)
    /// where it did not move (material is found only in two-player games
    /// whose goals sum to 100). The reference is the state given last to
    /// [`Lanes::set_cutoff_reference`] (until then, an even share). `None`,
    /// or a game with other than two roles: playouts run to the end.
    pub fn set_cutoff(&mut self, plan: &LanePlan, cutoff: Option<(u32, &Material)>) {
        self.cutoff = cutoff.filter(|(_, m)| m.pieces.len() == 2).map(|(steps, m)| {
            let words = |role: usize| {
                m.pieces[role]
                    .iter()
                    .filter_map(|&(b, v)| plan.base.get(b as usize).map(|&w| (w, v)))
                    .collect::<Vec<_>>()
            };
            Cutoff { steps: steps.max(2), pieces: [words(0), words(1)], then: 0.0 }
        });
    }

    /// The state (one bit per base) that cut rollouts are valued against
    /// ([`Lanes::set_cutoff`]): the search's root.
    pub fn set_cutoff_reference(&mut self, material: &Material, bits: &[u64]) {
        if let Some(c) = &mut self.cutoff {
            c.then = material.share(bits);
        }
    }

    /// The steps after which rollouts are cut (`None`: never).
    pub fn cutoff(&self) -> Option<u32> {
        self.cutoff.as_ref().map(|c| c.steps)
    }

    /// Safe-first move choice (with a win-first set; see the module
    /// comment): a move after which another role has a winning input
    /// legal is taken back and another chosen.
    pub fn set_safe_first(&mut self, on: bool) {
        self.safe = on;
    }

    /// Whether safe-first move choice is on and has winning moves to
    /// look for (win-first inputs, or decisive lanes' look-ahead).
    pub fn safe_first(&self) -> bool {
        self.safe && (!self.win.is_empty() || self.decisive.is_some())
    }

    /// Win-first move choice: wherever a role has one of `winning` legal
    /// (inputs that, in the sample that found them, won the game at once
    /// for the role that played them), the lane plays one of them, drawn
    /// uniformly among those legal there. Empty: uniform moves. Inputs
    /// the plan does not have are ignored.
    pub fn set_win_first(&mut self, plan: &LanePlan, winning: &[u32]) {
        self.win.clear();
        self.win.extend(winning.iter().copied().filter(|&i| (i as usize) < plan.legal.len()));
        self.win.sort_unstable();
        self.win.dedup();
    }

    /// The win-first inputs ([`Lanes::set_win_first`]).
    pub fn win_first(&self) -> &[u32] {
        &self.win
    }

    /// Decisive lanes: finds, for the lanes of `moving` where exactly one
    /// role has a choice, the inputs that end the game at once with that
    /// role's win (`Decisive::wins`, `Decisive::masks`), by evaluating
    /// the children in a copy of the lane memory, one round per move of
    /// the lane with the most. Called with this step's inputs cleared and
    /// the state's gates evaluated.
    pub(super) fn look_ahead(
        &mut self,
        plan: &LanePlan,
        eval: &mut impl LaneEval,
        role_range: &[(u32, u32)],
        moving: Word,
    ) {
        let Lanes { words, direct, aliased, decisive, capture, .. } = self;
        let Some(d) = decisive.as_deref_mut() else { return };
        for &i in &d.wins {
            d.masks[plan.legal[i as usize] as usize] = 0;
        }
        d.wins.clear();
        d.choice.clear();
        let mut capture = capture.as_mut().filter(|c| c.table.is_empty());
        if let Some(c) = &mut capture {
            for &i in &c.caps {
                c.masks[plan.legal[i as usize] as usize] = 0;
            }
            c.caps.clear();
            c.choosers.clear();
        }
        let (mut once, mut twice) = (0 as Word, 0 as Word);
        for &(lo, hi) in role_range {
            let (mut any, mut many) = (0 as Word, 0 as Word);
            for &at in &plan.legal[lo as usize..hi as usize] {
                let w = words[at as usize] & moving;
                many |= any & w;
                any |= w;
            }
            d.choice.push(many);
            twice |= once & many;
            once |= many;
        }
        // Simultaneous choices are left to the uniform draw.
        let single = once & !twice;
        if single == 0 {
            return;
        }
        d.base.copy_from_slice(words);
        for (r, &(lo, hi)) in role_range.iter().enumerate() {
            // A role without a choice plays its one legal input.
            let passive = single & !d.choice[r];
            for i in lo as usize..hi as usize {
                d.base[plan.input[i] as usize] = words[plan.legal[i] as usize] & passive;
            }
        }
        // Each lane's untried moves; each round plays every lane's first
        // untried one at once, so the rounds are as many as the most
        // moves a lane has, not the moves legal in some lane.
        d.left.clear();
        d.owns.clear();
        for (r, &(lo, hi)) in role_range.iter().enumerate() {
            let own = single & d.choice[r];
            if own == 0 {
                continue;
            }
            let goal = d.win_goal.get(r).copied().flatten();
            if let Some(goal) = goal {
                d.owns.push((goal, own));
            }
            match &mut capture {
                Some(c) if c.foes.get(r).is_some_and(|f| !f.is_empty()) => c.choosers.push((r, own)),
                _ if goal.is_none() => continue,
                _ => {}
            }
            for i in lo as usize..hi as usize {
                let lanes = words[plan.legal[i] as usize] & own;
                if lanes != 0 {
                    d.left.push((i as u32, lanes));
                }
            }
        }
        loop {
            d.probe.copy_from_slice(&d.base);
            d.round.clear();
            let mut unpicked = !0 as Word;
            for (i, left) in d.left.iter_mut() {
                let p = *left & unpicked;
                if p != 0 {
                    unpicked &= !p;
                    *left &= !p;
                    d.probe[plan.input[*i as usize] as usize] |= p;
                    d.round.push((*i, p));
                }
            }
            if d.round.is_empty() {
                break;
            }
            d.left.retain(|&(_, l)| l != 0);
            eval.next(&mut d.probe);
            advance_words(&mut d.probe, &mut d.next, direct, aliased, 0);
            if let Some(c) = &mut capture {
                // A piece of another role there before the move and
                // gone after it.
                let mut took = 0 as Word;
                for &(r, own) in &c.choosers {
                    let gone =
                        c.foes[r].iter().fold(0 as Word, |x, &w| x | (d.base[w as usize] & !d.probe[w as usize]));
                    took |= gone & own;
                }
                mark_round(&d.round, &plan.legal, took & !unpicked, &mut c.masks, &mut c.caps);
            }
            eval.state(&mut d.probe);
            let ended = d.probe[plan.terminal as usize] & !unpicked;
            if ended == 0 {
                continue;
            }
            if plan.goal_net {
                eval.goals(&mut d.probe);
            }
            let win = d.owns.iter().fold(0 as Word, |x, &(goal, own)| x | (d.probe[goal as usize] & own)) & ended;
            mark_round(&d.round, &plan.legal, win, &mut d.masks, &mut d.wins);
        }
        d.wins.sort_unstable();
        if let Some(c) = &mut capture {
            c.caps.sort_unstable();
        }
    }

    /// Capture-first lanes with a table ([`Captures::Table`]): the inputs
    /// legal in some lane of `moving` where a piece they take stands
    /// (`Capture::caps`, and their lanes in `Capture::masks`). Called
    /// with the state's gates evaluated.
    pub(super) fn table_captures(&mut self, plan: &LanePlan, moving: Word) {
        let Lanes { words, capture, .. } = self;
        let Some(c) = capture.as_mut().filter(|c| !c.table.is_empty()) else { return };
        for &i in &c.caps {
            c.masks[plan.legal[i as usize] as usize] = 0;
        }
        c.caps.clear();
        if moving == 0 {
            return;
        }
        for (i, takes) in &c.table {
            let at = plan.legal[*i as usize] as usize;
            let lanes = words[at] & moving;
            if lanes == 0 {
                continue;
            }
            let took = takes.iter().fold(0 as Word, |x, &w| x | words[w as usize]) & lanes;
            if took != 0 {
                c.masks[at] = took;
                c.caps.push(*i);
            }
        }
    }

    /// Safe-first: the lanes of `candidates` (they chose their last move
    /// freely) where that move left another role a winning input legal
    /// take it back: their bases return to the state before it, and the
    /// move joins the ones they may not choose again. Returns those lanes.
    pub(super) fn take_back(&mut self, plan: &LanePlan, role_range: &[(u32, u32)], candidates: Word) -> Word {
        let Lanes { words, win, safe_state: st, decisive, .. } = self;
        let moved = candidates & !st.waited;
        let mut back = 0 as Word;
        // The winning inputs and, at their legal words, where they win:
        // the look-ahead's, or the win-first set's wherever legal.
        let (win, at) = match decisive.as_deref() {
            Some(d) => (&d.wins[..], &d.masks[..]),
            None => (&win[..], &words[..]),
        };
        for &(lo, hi) in role_range {
            let a = win.partition_point(|&i| i < lo);
            let b = win.partition_point(|&i| i < hi);
            let mut threat =
                win[a..b].iter().fold(0, |x, &i| x | at[plan.legal[i as usize] as usize]) & moved & !st.spent;
            each_lane(threat, |l| {
                if st.tries[l] >= SAFE_TRIES {
                    threat &= !LANE_BIT[l];
                }
            });
            if threat == 0 {
                continue;
            }
            back |= threat;
            // The other roles' moves are the ones taken back.
            for &(input, lanes) in &st.chosen {
                if (input < lo || input >= hi) && lanes & threat != 0 {
                    st.tried.push((input, lanes & threat));
                }
            }
        }
        st.spent &= !moved;
        // A decision is over for the lanes that moved and keep their move.
        let deciding = back | st.waited;
        each_lane(moved & !back, |l| st.tries[l] = 0);
        each_lane(back, |l| st.tries[l] += 1);
        st.tried.retain_mut(|(_, lanes)| {
            *lanes &= deciding;
            *lanes != 0
        });
        st.waited = back;
        if back != 0 {
            for (&b, &p) in plan.base.iter().zip(&st.prev) {
                let w = &mut words[b as usize];
                *w = (*w & !back) | (p & back);
            }
        }
        back
    }

    /// Safe-first: hides from the lanes of `moving` the moves they took
    /// back in the decision they are making (by clearing their legal
    /// bits, which the next step computes afresh), except in lanes where
    /// that would leave a role no move: those choose among all their
    /// moves and take nothing back in this decision.
    pub(super) fn exclude_tried(&mut self, plan: &LanePlan, role_range: &[(u32, u32)], moving: Word) {
        let Lanes { words, safe_state: st, .. } = self;
        if st.tried.is_empty() {
            return;
        }
        for &(lo, hi) in role_range {
            let mut lanes = 0 as Word;
            for &(input, m) in st.tried.iter().filter(|(i, _)| (lo..hi).contains(i)) {
                words[plan.legal[input as usize] as usize] &= !(m & moving);
                lanes |= m & moving;
            }
            if lanes == 0 {
                continue;
            }
            let any = (lo..hi).fold(0, |x, i| x | words[plan.legal[i as usize] as usize]);
            let empty = lanes & !any;
            if empty != 0 {
                // Every move tried: the lane's moves were all legal here,
                // so their bits come back as they were.
                for &(input, m) in st.tried.iter().filter(|(i, _)| (lo..hi).contains(i)) {
                    words[plan.legal[input as usize] as usize] |= m & empty;
                }
                st.spent |= empty;
                for (_, m) in st.tried.iter_mut() {
                    *m &= !empty;
                }
            }
        }
    }

    /// Material cutoff: ends the lanes of `live` that have played the
    /// cutoff's steps, each valued by its material; returns them.
    pub(super) fn cut(&mut self, live: Word, step: u32, source: &mut impl LaneSource) -> Word {
        let Lanes { cutoff, started, words, moves, .. } = self;
        let Some(c) = cutoff.as_ref() else { return 0 };
        let mut cut: Word = 0;
        each_lane(live, |l| {
            // A lane that took moves back has its start moved past them.
            if step.saturating_sub(started[l]) >= c.steps {
                cut |= LANE_BIT[l];
            }
        });
        each_lane(cut, |l| {
            let material = |role: usize| -> f64 {
                c.pieces[role].iter().filter(|&&(w, _)| words[w as usize] >> l & 1 == 1).map(|&(_, v)| v).sum()
            };
            // A win for the role whose share of the material grew since
            // the reference, a draw where it did not move: a soft value
            // (a pawn up in 32 is 0.56) would sit inside the spread that
            // exploration tuned for wins and losses ignores.
            let h = Material::value(material(0), material(1), c.then);
            let g = if h > 0.5 + 1e-9 {
                100
            } else if h < 0.5 - 1e-9 {
                0
            } else {
                50
            };
            if let Some(log) = moves.as_mut() {
                log.report(l, source);
            }
            source.finished(l, &[g, 100 - g], step.saturating_sub(started[l]));
        });
        cut
    }

    /// The earliest step at which a lane of `active` started.
    pub(super) fn oldest(&self, active: Word) -> u32 {
        (0..LANES).filter(|&l| active >> l & 1 == 1).map(|l| self.started[l]).min().unwrap_or(0)
    }
}
