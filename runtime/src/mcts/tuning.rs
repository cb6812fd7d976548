//! Search settings chosen on the command line (`--search KEY=VALUE,...`),
//! and how they combine with what the meta-game analysis found into a
//! search [`Config`]: every strength feature can be switched on or off
//! this way, to be measured in matches against the default.

use super::Config;
use crate::analysis::Analysis;
use std::sync::Arc;

/// A setting the analysis decides unless the command line does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Switch {
    #[default]
    Auto,
    On,
    Off,
}

impl Switch {
    fn parse(v: &str) -> Result<Switch, String> {
        match v {
            "auto" => Ok(Switch::Auto),
            "on" | "true" | "1" => Ok(Switch::On),
            "off" | "false" | "0" => Ok(Switch::Off),
            _ => Err(format!("`{v}` is not auto, on or off")),
        }
    }

    /// The setting, `analysed` where the analysis decides.
    pub fn or(self, analysed: bool) -> bool {
        match self {
            Switch::Auto => analysed,
            Switch::On => true,
            Switch::Off => false,
        }
    }
}

/// The search settings the command line can change.
#[derive(Clone, Debug, PartialEq)]
pub struct Tuning {
    /// `material=auto|off`: new nodes start at their material relative to
    /// the root, where the analysis finds material.
    pub material: bool,
    /// `weight=N`: virtual visits at a node's material value (default:
    /// the analysis's).
    pub material_weight: Option<u32>,
    /// `greedy=auto|on|off`: greedy rollouts (take a win one move away,
    /// avoid a loss one move away).
    pub greedy: Switch,
    /// `win-first=auto|on|off`: where rollouts run on lanes, the lanes
    /// take a move that wins at once (the analysis's `winning` moves)
    /// wherever one is legal. auto: where greedy rollouts are on, lanes
    /// with win-first moves instead of greedy rollouts one at a time;
    /// off: greedy rollouts one at a time as before (no lanes with them).
    pub win_first: Switch,
    /// `safe-first=auto|on|off`: with win-first lanes, a lane's move that
    /// leaves the other side a winning move is taken back and another
    /// tried. auto: off.
    pub safe_first: Switch,
    /// `decisive=auto|on|off`: where rollouts run on lanes, each step
    /// tries the moves one ply ahead and takes one that wins at once
    /// (in place of win-first moves), with safe-first unless that is
    /// off. auto: where the analysis chooses it.
    pub decisive: Switch,
    /// `expand-terminal=auto|on|off`: make a node's terminal children when
    /// it is expanded.
    pub expand_terminal: Switch,
    /// `expand-after=N`: a child joins the graph from the N-th visit of
    /// the move to it ([`Config::expand_after`]).
    pub expand_after: u32,
    /// `minimax=A`: implicit minimax backups of the material, a child's
    /// value in UCB being A of its minimax material value (0: off).
    pub minimax: f64,
    /// `mast=E|off`: MAST rollouts with a share E (0..1) of random moves.
    pub mast: Option<f64>,
    /// `exploration=C`: UCB's exploration constant, instead of the one
    /// the analysis scales from the spread of random games' goals.
    pub exploration: Option<f64>,
    /// `cutoff=N`: where material is in play, lane rollouts stop after N
    /// steps, valued by material ([`Config::cutoff`]; 0: off).
    pub cutoff: u32,
    /// `rave=B`: RAVE with bias B over lane rollouts ([`Config::rave`];
    /// 0: off).
    pub rave: f64,
    /// `normalize=auto|on|off`: periodic value normalisation
    /// ([`Config::normalize`]). auto: off.
    pub normalize: Switch,
    /// `material-ref=auto|root|parent`: material seeds relative to the
    /// root, or only where a move changes the material, relative to the
    /// node it leaves ([`Config::local_material`]). auto (`None`): parent.
    pub local_material: Option<bool>,
    /// `material-backup=auto|on|off`: Sancho's material-adjusted backups
    /// ([`Config::material_backup`]). auto: on (they need material).
    pub material_backup: Switch,
    /// `drop-lost=auto|on|off`: proven losses not backed up
    /// ([`Config::drop_lost`]). auto: on where the analysis found material
    /// (where it was measured, with the two settings above).
    pub drop_lost: Switch,
    /// `settle=auto|on|off`: solved children passed by while a move is
    /// open ([`Config::settle`]). auto: off.
    pub settle: Switch,
    /// `inflight=N`: lanes holding a selection at once, per search thread
    /// ([`Config::inflight`]; default all 128).
    pub inflight: Option<usize>,
    /// `capture=auto|P`: where material is in play, capture-first lanes
    /// with chance P ([`Config::capture`]; 0: off). auto (`None`):
    /// [`CAPTURE_CHANCE`] where the captures come from a table.
    pub capture: Option<f64>,
    /// `capture-by=table|look-ahead`: capture-first lanes read their
    /// captures from the analysis's table of moves seen to take a piece
    /// ([`Config::capture_table`]; none where it has no table), or find
    /// them with the decisive look-ahead (on decisive safe-first lanes).
    pub capture_by_table: bool,
    /// `features=auto|off`: off, no setting the analysis derives from the
    /// game is used (exploration 0.7, uniform rollouts, no material,
    /// heuristics, terminal children or factors); only the goal bounds,
    /// which are facts of the rules, and the settings given here. The
    /// player's validation plays the analysed settings against these.
    pub features: bool,
}

/// The chance of a capture where `capture=auto` turns capture-first lanes
/// on: at 0.5 they lost breakthrough 0-10 and knightThrough 4-6 to the
/// same lanes at 1 (`propel duel`, RESULTS.md).
pub const CAPTURE_CHANCE: f64 = 1.0;

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            material: true,
            material_weight: None,
            greedy: Switch::Auto,
            win_first: Switch::Auto,
            safe_first: Switch::Auto,
            decisive: Switch::Auto,
            expand_terminal: Switch::Auto,
            expand_after: super::EXPAND_AFTER,
            minimax: 0.0,
            mast: None,
            exploration: None,
            cutoff: 0,
            rave: 0.0,
            normalize: Switch::Auto,
            local_material: None,
            material_backup: Switch::Auto,
            drop_lost: Switch::Auto,
            settle: Switch::Auto,
            inflight: None,
            capture: None,
            capture_by_table: true,
            features: true,
        }
    }
}

impl std::str::FromStr for Tuning {
    type Err = String;
    fn from_str(s: &str) -> Result<Tuning, String> {
        let mut t = Tuning::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (k, v) = item.split_once('=').ok_or_else(|| format!("`{item}` is not KEY=VALUE"))?;
            let bad = |e: String| format!("{k}: {e}");
            match k {
                "material" => {
                    t.material = match Switch::parse(v).map_err(bad)? {
                        Switch::Off => false,
                        Switch::Auto | Switch::On => true,
                    }
                }
                "weight" => {
                    let w: u32 = v.parse().map_err(|_| bad(format!("`{v}` is not a count of visits")))?;
                    if w > 1000 {
                        return Err(bad(format!("{w} visits is more than 1000")));
                    }
                    t.material_weight = Some(w);
                }
                "greedy" => t.greedy = Switch::parse(v).map_err(bad)?,
                "win-first" => t.win_first = Switch::parse(v).map_err(bad)?,
                "safe-first" => t.safe_first = Switch::parse(v).map_err(bad)?,
                "decisive" => t.decisive = Switch::parse(v).map_err(bad)?,
                "expand-terminal" => t.expand_terminal = Switch::parse(v).map_err(bad)?,
                "expand-after" => t.expand_after = within(v, 1..=1000, "a count of visits from 1 to 1000").map_err(bad)?,
                "mast" if v == "off" => t.mast = None,
                "mast" => t.mast = Some(within(v, 0.0..=1.0, "off or a share from 0 to 1").map_err(bad)?),
                "minimax" => t.minimax = within(v, 0.0..=1.0, "a weight from 0 to 1").map_err(bad)?,
                "cutoff" => t.cutoff = within(v, 0..=10_000, "a count of steps from 0 (off) to 10000").map_err(bad)?,
                "capture" if v == "auto" => t.capture = None,
                "capture" => {
                    t.capture = Some(within(v, 0.0..=1.0, "auto or a chance from 0 (off) to 1").map_err(bad)?)
                }
                "capture-by" => {
                    t.capture_by_table = match v {
                        "look-ahead" => false,
                        "table" => true,
                        _ => return Err(bad(format!("`{v}` is not look-ahead or table"))),
                    }
                }
                "rave" => t.rave = within(v, 0.0..=1.0, "a bias from 0 (off) to 1").map_err(bad)?,
                "normalize" => t.normalize = Switch::parse(v).map_err(bad)?,
                "material-ref" => {
                    t.local_material = match v {
                        "auto" => None,
                        "root" => Some(false),
                        "parent" => Some(true),
                        _ => return Err(bad(format!("`{v}` is not auto, root or parent"))),
                    }
                }
                "material-backup" => t.material_backup = Switch::parse(v).map_err(bad)?,
                "features" => {
                    t.features = match Switch::parse(v).map_err(bad)? {
                        Switch::Off => false,
                        Switch::Auto => true,
                        Switch::On => return Err(bad("`on` is the analysis's choice: auto or off".into())),
                    }
                }
                "drop-lost" => t.drop_lost = Switch::parse(v).map_err(bad)?,
                "settle" => t.settle = Switch::parse(v).map_err(bad)?,
                "inflight" => {
                    t.inflight = Some(within(v, 1..=crate::lanes::LANES, "a count of lanes from 1 to 128").map_err(bad)?)
                }
                "exploration" => {
                    t.exploration = Some(within(v, 0.0..=10.0, "a constant from 0 to 10").map_err(bad)?)
                }
                _ => {
                    return Err(format!(
                        "unknown search setting `{k}` (features, material, weight, greedy, win-first, safe-first, decisive, expand-terminal, expand-after, minimax, mast, exploration, cutoff, rave, normalize, material-ref, material-backup, drop-lost, settle, inflight, capture, capture-by)"
                    ))
                }
            }
        }
        Ok(t)
    }
}

/// `v` as a number in `range`, or why not (`what` it should be).
fn within<T: std::str::FromStr + PartialOrd>(
    v: &str,
    range: std::ops::RangeInclusive<T>,
    what: &str,
) -> Result<T, String> {
    v.parse().ok().filter(|x| range.contains(x)).ok_or_else(|| format!("`{v}` is not {what}"))
}

impl Tuning {
    /// Sets `c` from the analysis `a` and these settings; `heuristics`
    /// and `factored` say whether the learnt evaluator and the factored
    /// search may be used.
    pub fn configure(&self, c: &mut Config, a: &Analysis, heuristics: bool, factored: bool) {
        if !self.features {
            self.configure_plain(c, a);
            return;
        }
        c.exploration = self.exploration.unwrap_or(a.exploration);
        c.greedy = self.greedy.or(a.greedy_rollouts);
        c.greedy_moves = a.greedy.clone().map(Arc::new);
        // Win-first lanes stand in for greedy rollouts where those are on.
        let win_first = self.win_first.or(c.greedy) && !a.winning.is_empty();
        c.win_first = win_first.then(|| Arc::from(a.winning.as_slice()));
        c.decisive = self.decisive.or(a.decisive);
        // Decisive lanes alone lost connect four 1-0-7 to the default;
        // taking back the moves that leave a win, 3-1-0 (RESULTS.md).
        c.safe_first = (win_first || c.decisive) && self.safe_first.or(c.decisive);
        c.expand_terminal = self.expand_terminal.or(a.expand_terminal);
        c.expand_after = self.expand_after;
        c.goal_max = a.goal_bounds.iter().map(|&(_, hi)| hi as f64 / 100.0).collect();
        if heuristics {
            c.heuristic = a.evaluator.clone().map(Arc::new);
        }
        if heuristics && self.material {
            c.material = a.material.clone().map(|mut m| {
                if let Some(w) = self.material_weight {
                    m.weight = w;
                }
                Arc::new(m)
            });
        }
        c.minimax = self.minimax;
        c.cutoff = if c.material.is_some() { self.cutoff } else { 0 };
        // Capture-first lanes read the analysis's table (none where it has
        // none), or ride on the decisive look-ahead, with safe-first unless
        // that is off.
        let chance = if c.material.is_some() { self.capture.unwrap_or(CAPTURE_CHANCE) } else { 0.0 };
        c.capture = chance;
        c.capture_table = None;
        if self.capture_by_table {
            if a.captures.is_empty() {
                c.capture = 0.0;
            } else if chance > 0.0 {
                c.capture_table = Some(Arc::new(a.captures.clone()));
            }
        } else if chance > 0.0 {
            c.decisive = true;
            c.safe_first = self.safe_first.or(true);
        }
        c.mast = self.mast;
        c.rave = self.rave;
        c.normalize = self.normalize.or(false);
        // Sancho's three rules for material together (20-1-7 against the
        // rules before in self-play on four games with material;
        // RESULTS.md).
        let material = c.material.is_some();
        c.local_material = self.local_material.unwrap_or(true);
        c.material_backup = self.material_backup.or(true);
        c.drop_lost = self.drop_lost.or(material);
        c.settle = self.settle.or(false);
        c.inflight = self.inflight.unwrap_or(crate::lanes::LANES);
        if factored {
            c.factors = a.factors.iter().map(|f| f.moves.clone()).collect();
        }
    }

    /// Sets `c` with no feature the analysis derives: the goal bounds
    /// (facts of the rules) and the settings that do not come from the
    /// analysis.
    pub fn configure_plain(&self, c: &mut Config, a: &Analysis) {
        let defaults = Config::default();
        c.exploration = self.exploration.unwrap_or(defaults.exploration);
        c.greedy = self.greedy == Switch::On;
        c.greedy_moves = None;
        c.win_first = None;
        c.safe_first = false;
        c.decisive = self.decisive == Switch::On;
        c.expand_terminal = self.expand_terminal == Switch::On;
        c.expand_after = self.expand_after;
        c.goal_max = a.goal_bounds.iter().map(|&(_, hi)| hi as f64 / 100.0).collect();
        c.heuristic = None;
        c.material = None;
        c.minimax = self.minimax;
        c.cutoff = 0;
        c.capture = 0.0;
        c.capture_table = None;
        c.mast = self.mast;
        c.rave = self.rave;
        c.normalize = self.normalize.or(false);
        c.local_material = self.local_material.unwrap_or(true);
        c.material_backup = self.material_backup.or(true);
        c.drop_lost = self.drop_lost.or(false);
        c.settle = self.settle.or(false);
        c.inflight = self.inflight.unwrap_or(crate::lanes::LANES);
        c.factors = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_bad_ones_are_refused() {
        let t: Tuning = "material=off, weight=3,greedy=on".parse().unwrap();
        assert!(!t.material);
        assert_eq!(t.material_weight, Some(3));
        assert_eq!(t.greedy, Switch::On);
        assert_eq!(t.win_first, Switch::Auto);
        assert_eq!("win-first=off".parse::<Tuning>().unwrap().win_first, Switch::Off);
        assert_eq!("expand-after=3".parse::<Tuning>().unwrap().expand_after, 3);
        assert_eq!("exploration=0.4".parse::<Tuning>().unwrap().exploration, Some(0.4));
        assert_eq!("rave=0.05".parse::<Tuning>().unwrap().rave, 0.05);
        assert_eq!("normalize=on".parse::<Tuning>().unwrap().normalize, Switch::On);
        assert!("normalize=maybe".parse::<Tuning>().is_err());
        assert_eq!("material-ref=parent".parse::<Tuning>().unwrap().local_material, Some(true));
        assert_eq!("material-ref=root".parse::<Tuning>().unwrap().local_material, Some(false));
        assert_eq!("material-ref=auto".parse::<Tuning>().unwrap().local_material, None);
        assert!("material-ref=uncle".parse::<Tuning>().is_err());
        assert_eq!("material-backup=on".parse::<Tuning>().unwrap().material_backup, Switch::On);
        assert!("material-backup=2".parse::<Tuning>().is_err());
        assert_eq!("drop-lost=on".parse::<Tuning>().unwrap().drop_lost, Switch::On);
        assert!("rave=2".parse::<Tuning>().is_err());
        assert!("rave=-1".parse::<Tuning>().is_err());
        assert_eq!("".parse::<Tuning>().unwrap(), Tuning::default());
        let bad_ones = ["material", "weight=x", "weight=5000", "greedy=maybe", "win-first=2", "speed=11"];
        for bad in bad_ones.into_iter().chain([
            "expand-after=0",
            "expand-after=1001",
            "expand-after=x",
            "mast=2",
            "minimax=-1",
            "exploration=11",
            "exploration=x",
        ]) {
            assert!(bad.parse::<Tuning>().is_err(), "{bad}");
        }
    }

    /// Win-first lanes follow greedy rollouts unless told otherwise, and
    /// only where the analysis found winning moves.
    #[test]
    fn win_first_follows_greedy_and_needs_winning_moves() {
        let a = Analysis { greedy_rollouts: true, winning: vec![3, 7], ..Analysis::default() };
        let win_first = |t: &str, a: &Analysis| {
            let mut c = Config::default();
            t.parse::<Tuning>().unwrap().configure(&mut c, a, false, false);
            c.win_first.map(|w| w.to_vec())
        };
        assert_eq!(win_first("", &a), Some(vec![3, 7]));
        assert_eq!(win_first("win-first=off", &a), None);
        assert_eq!(win_first("greedy=off", &a), None);
        assert_eq!(win_first("greedy=off,win-first=on", &a), Some(vec![3, 7]));
        let none = Analysis { winning: Vec::new(), ..a.clone() };
        assert_eq!(win_first("win-first=on", &none), None);
    }

    /// Where the analysis found material, Sancho's three rules for it are
    /// on unless the command line turns them off; without material,
    /// proven losses are backed up as before.
    #[test]
    fn sanchos_material_rules_where_there_is_material() {
        let material =
            crate::heuristic::Material { pieces: vec![vec![(0, 1.0)], vec![(1, 1.0)]], names: Vec::new(), weight: 5 };
        let with = Analysis { material: Some(material), ..Analysis::default() };
        let config = |t: &str, a: &Analysis| {
            let mut c = Config::default();
            t.parse::<Tuning>().unwrap().configure(&mut c, a, true, false);
            (c.material.is_some(), c.local_material, c.material_backup, c.drop_lost)
        };
        assert_eq!(config("", &with), (true, true, true, true));
        assert_eq!(config("material-ref=root,material-backup=off,drop-lost=off", &with), (true, false, false, false));
        assert_eq!(config("material=off", &with), (false, true, true, false));
        assert!(!config("", &Analysis::default()).3);
        assert!(config("drop-lost=on", &Analysis::default()).3);
    }

    /// Settled children are passed by only where asked for.
    #[test]
    fn settle_is_off_unless_asked_for() {
        let settle = |t: &str| {
            let mut c = Config::default();
            t.parse::<Tuning>().unwrap().configure(&mut c, &Analysis::default(), true, false);
            c.settle
        };
        assert!(!settle(""));
        assert!(!settle("settle=auto"));
        assert!(settle("settle=on"));
        assert!("settle=sometimes".parse::<Tuning>().is_err());
    }

    /// `inflight` sets how many lanes hold a selection, 1 to 128; all by
    /// default.
    #[test]
    fn inflight_from_one_to_all_lanes() {
        let inflight = |t: &str| {
            let mut c = Config::default();
            t.parse::<Tuning>().unwrap().configure(&mut c, &Analysis::default(), true, false);
            c.inflight
        };
        assert_eq!(inflight(""), crate::lanes::LANES);
        assert_eq!(inflight("inflight=16"), 16);
        assert!("inflight=0".parse::<Tuning>().is_err());
        assert!("inflight=129".parse::<Tuning>().is_err());
    }

    /// The analysis scales the exploration constant unless the command
    /// line sets it.
    #[test]
    fn exploration_from_the_analysis_unless_set() {
        let a = Analysis { exploration: 0.55, ..Analysis::default() };
        let exploration = |t: &str| {
            let mut c = Config::default();
            t.parse::<Tuning>().unwrap().configure(&mut c, &a, false, false);
            c.exploration
        };
        assert_eq!(exploration(""), 0.55);
        assert_eq!(exploration("exploration=0.3"), 0.3);
    }

    /// Safe-first lanes come only with win-first lanes.
    #[test]
    fn safe_first_needs_win_first() {
        let a = Analysis { greedy_rollouts: true, winning: vec![3, 7], ..Analysis::default() };
        let safe_first = |t: &str| {
            let mut c = Config::default();
            t.parse::<Tuning>().unwrap().configure(&mut c, &a, false, false);
            c.safe_first
        };
        assert!(safe_first("safe-first=on"));
        assert!(!safe_first("safe-first=on,win-first=off"));
        assert!(!safe_first("safe-first=off"));
        assert!("safe-first=2".parse::<Tuning>().is_err());
    }

    /// Decisive lanes where the analysis chooses them or asked for, and
    /// safe-first with them unless switched off.
    #[test]
    fn decisive_lanes_from_the_analysis_with_safe_first() {
        let lanes = |decisive: bool, t: &str| {
            let a = Analysis { greedy_rollouts: true, decisive, ..Analysis::default() };
            let mut c = Config::default();
            t.parse::<Tuning>().unwrap().configure(&mut c, &a, false, false);
            (c.decisive, c.safe_first)
        };
        assert_eq!(lanes(false, ""), (false, false));
        assert_eq!(lanes(false, "decisive=on"), (true, true));
        assert_eq!(lanes(true, ""), (true, true));
        assert_eq!(lanes(true, "safe-first=off"), (true, false));
        assert_eq!(lanes(true, "decisive=off"), (false, false));
    }

    /// Capture-first lanes only where the analysis found material; with
    /// the look-ahead they turn decisive lanes on, with safe-first unless
    /// that is off.
    #[test]
    fn capture_first_needs_material_and_brings_decisive_lanes() {
        let material = crate::heuristic::Material {
            pieces: vec![vec![(0, 1.0)], vec![(1, 1.0)]],
            names: vec![Vec::new(), Vec::new()],
            weight: 5,
        };
        let with = Analysis { material: Some(material), ..Analysis::default() };
        let lanes = |a: &Analysis, t: &str| {
            let mut c = Config::default();
            t.parse::<Tuning>().unwrap().configure(&mut c, a, true, false);
            (c.capture, c.decisive, c.safe_first, c.capture_table.map(|t| t.len()))
        };
        let look = |t: &str| format!("{t},capture-by=look-ahead");
        assert_eq!(lanes(&with, &look("capture=0.75")), (0.75, true, true, None));
        assert_eq!(lanes(&with, &look("capture=1,safe-first=off")), (1.0, true, false, None));
        assert_eq!(lanes(&with, &look("capture=0")).0, 0.0);
        assert_eq!(lanes(&Analysis::default(), &look("capture=1")), (0.0, false, false, None));
        assert!("capture=1.5".parse::<Tuning>().is_err());
        assert!("capture-by=guess".parse::<Tuning>().is_err());
        // By table (the default): on at the default chance where the
        // analysis has a table, with no look-ahead; off without one.
        let table = Analysis { captures: vec![(3, vec![0]), (5, vec![0])], ..with.clone() };
        assert_eq!(lanes(&table, ""), (CAPTURE_CHANCE, false, false, Some(2)));
        assert_eq!(lanes(&table, "capture=0.5"), (0.5, false, false, Some(2)));
        assert_eq!(lanes(&table, "capture=0"), (0.0, false, false, None));
        assert_eq!(lanes(&with, ""), (0.0, false, false, None));
        let no_material = Analysis { material: None, ..table.clone() };
        assert_eq!(lanes(&no_material, ""), (0.0, false, false, None));
    }
}
