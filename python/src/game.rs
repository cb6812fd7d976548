//! `propel.Game` and `propel.State`: a game's machine behind a lock, its
//! move and base tables, and states that know their game.

use crate::batch;
use crate::errors::{build_error, gdl_error, machine_error, PropelError};
use crate::machine::{build, canonical, Kind, Machine, Moves, Mv, Repr};
use crate::numpy;
use propel_compiler::ground::GroundLimits;
use propel_compiler::propnet::passes::Pass;
use propel_runtime::build::BuildOptions;
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyList, PyString, PyTuple};
use rustc_hash::FxHashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

/// How a game was loaded: what its pickle carries to load it again.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Source {
    pub(crate) name: String,
    pub(crate) text: Vec<u8>,
    pub(crate) kind: Kind,
    pub(crate) ground_seconds: f64,
    pub(crate) passes: String,
}

/// The machine and what changes with it (the prover's move table grows).
pub(crate) struct Core {
    pub(crate) machine: Machine,
    pub(crate) moves: Moves,
    legal: Vec<Mv>,
    values: Vec<u8>,
}

/// A loaded game, shared by its Python handles and its states.
pub(crate) struct Shared {
    pub(crate) source: Source,
    roles: Vec<String>,
    bases: Option<Vec<String>>,
    base_index: FxHashMap<String, usize>,
    warnings: Vec<String>,
    /// Move names as Python strings (networks' complete tables only), so
    /// that listing moves makes no new strings.
    py_moves: Vec<Vec<Py<PyString>>>,
    core: Mutex<Core>,
    /// Network machines kept between batched calls (a clone costs its
    /// instance memory and lane set-up each time).
    spares: Mutex<Vec<Machine>>,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Core> {
        // A panic while the lock was held leaves the machine as valid as
        // any state it was evaluating: carry on with it.
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `k` machine instances for batched work: spares where there are,
    /// clones of the game's machine for the rest. The prover is always
    /// cloned: its terms are numbered per instance, so an older clone may
    /// not know the terms of a newer state.
    fn take_spares(&self, k: usize) -> Vec<Machine> {
        let mut out = Vec::with_capacity(k);
        if !self.source.kind.own_terms() {
            let mut spares = self.spares.lock().unwrap_or_else(|e| e.into_inner());
            let keep = spares.len().saturating_sub(k);
            out.extend(spares.drain(keep..));
        }
        if out.len() < k {
            let core = self.lock();
            out.extend((out.len()..k).map(|_| core.machine.clone()));
        }
        out
    }

    fn give_back(&self, machines: Vec<Machine>) {
        if !self.source.kind.own_terms() {
            let mut spares = self.spares.lock().unwrap_or_else(|e| e.into_inner());
            spares.extend(machines);
            spares.truncate(MAX_SPARES);
        }
    }
}

/// Most spare machines a game keeps for batched calls.
const MAX_SPARES: usize = 64;

/// Every game loaded and still alive, so that unpickling a game (or the
/// states of one, one by one) in a process that holds it reuses it
/// instead of building it again.
static LOADED: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// A game: its roles, states and moves, on one state machine.
///
/// Made by `propel.load`. Moves are strings (canonical KIF) or integer ids,
/// numbered per role: `game.move_names(role)[id]`. Methods that take a
/// state take only states of this game. Thread-safe; batched calls
/// (`random_playouts`, `observations`, `legal_masks`, `search`) release the
/// GIL.
#[pyclass(frozen, module = "propel._propel", name = "Game")]
pub(crate) struct Game {
    pub(crate) shared: Arc<Shared>,
}

/// A game state: immutable, hashable, comparable, picklable (it pickles
/// as its facts and its game's text).
#[pyclass(frozen, module = "propel._propel", name = "State")]
pub(crate) struct State {
    pub(crate) game: Arc<Shared>,
    pub(crate) repr: Repr,
}

/// Most threads a batched call starts (more only multiplies instances).
const MAX_THREADS: usize = 256;

/// Longest time a call may be given, in seconds (a year: larger values
/// would overflow the clock's arithmetic).
const MAX_SECONDS: f64 = 365.0 * 86_400.0;

fn seconds(name: &str, s: f64) -> PyResult<Duration> {
    if !(s.is_finite() && (0.0..=MAX_SECONDS).contains(&s)) {
        return Err(PyValueError::new_err(format!("{name} must be a number of seconds from 0 to {MAX_SECONDS}")));
    }
    Ok(Duration::from_secs_f64(s))
}

fn build_options(ground_seconds: f64, passes: &str) -> PyResult<BuildOptions> {
    let ground = seconds("ground_seconds", ground_seconds)?;
    let passes = Pass::parse_list(passes).map_err(PyValueError::new_err)?;
    let limits = GroundLimits { time: ground, ..Default::default() };
    Ok(BuildOptions { limits, passes, ..Default::default() })
}

/// Reads, validates and builds a game (without the GIL while it builds).
pub(crate) fn load(py: Python<'_>, source: Source) -> PyResult<Arc<Shared>> {
    let opts = build_options(source.ground_seconds, &source.passes)?;
    let game = propel_compiler::load(&source.name, source.text.clone()).map_err(|e| gdl_error(py, &e))?;
    let game = Arc::new(game);
    let kind = source.kind;
    let built = py.detach(|| build(&game, kind, &opts)).map_err(build_error)?;
    let py_moves = if built.moves.complete {
        built.moves.roles.iter().map(|r| r.names.iter().map(|n| PyString::new(py, n).unbind()).collect()).collect()
    } else {
        Vec::new()
    };
    let bases = built.bases;
    let base_index = bases.iter().flatten().enumerate().map(|(i, b)| (b.clone(), i)).collect();
    let shared = Arc::new(Shared {
        roles: game.role_names(),
        bases,
        base_index,
        warnings: game.warnings.clone(),
        py_moves,
        core: Mutex::new(Core { machine: built.machine, moves: built.moves, legal: Vec::new(), values: Vec::new() }),
        spares: Mutex::new(Vec::new()),
        source,
    });
    let mut games = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    games.retain(|w| w.strong_count() > 0);
    games.push(Arc::downgrade(&shared));
    Ok(shared)
}

/// The game loaded from `source` if one is alive, or a new one.
pub(crate) fn restore(py: Python<'_>, source: Source) -> PyResult<Arc<Shared>> {
    {
        let mut games = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        games.retain(|w| w.strong_count() > 0);
        if let Some(g) = games.iter().filter_map(Weak::upgrade).find(|g| g.source == source) {
            return Ok(g);
        }
    }
    load(py, source)
}

static NEXT_SEED: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);

/// A fresh seed for calls that were given none (a counter only needs to be
/// unique: relaxed ordering suffices).
fn fresh_seed() -> u64 {
    NEXT_SEED.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
}

impl Game {
    fn state<'a>(&self, s: &'a Bound<'_, State>) -> PyResult<&'a Repr> {
        let s = s.get();
        if !Arc::ptr_eq(&s.game, &self.shared) {
            return Err(PyValueError::new_err("a state of another game"));
        }
        Ok(&s.repr)
    }

    fn new_state(&self, repr: Repr) -> State {
        State { game: self.shared.clone(), repr }
    }

    fn role(&self, role: &Bound<'_, PyAny>) -> PyResult<usize> {
        if let Ok(i) = role.cast::<PyInt>() {
            let i: i64 = i.extract()?;
            return usize::try_from(i).ok().filter(|&r| r < self.shared.roles.len()).ok_or_else(|| {
                PyIndexError::new_err(format!("no role {i} (the game has {})", self.shared.roles.len()))
            });
        }
        let name: String = role.extract().map_err(|_| PyTypeError::new_err("a role is an index or a name"))?;
        let lower = name.to_lowercase();
        self.shared
            .roles
            .iter()
            .position(|r| *r == lower)
            .ok_or_else(|| PyValueError::new_err(format!("no role `{name}` (roles: {})", self.shared.roles.join(", "))))
    }

    fn bases(&self) -> PyResult<&[String]> {
        self.shared.bases.as_deref().ok_or_else(|| {
            PropelError::new_err(
                "the prover has no fixed set of base propositions: load with machine=\"propnet\" or \"jit\"",
            )
        })
    }

    fn complete_moves(&self, core: &Core) -> PyResult<()> {
        if core.moves.complete {
            Ok(())
        } else {
            Err(PropelError::new_err(
                "the prover numbers moves as it meets them and cannot list them all: load with machine=\"propnet\" or \"jit\"",
            ))
        }
    }

    /// The machine move for `m` (an id or a name) of `role`.
    fn parse_move(core: &mut Core, role: usize, m: &Bound<'_, PyAny>) -> PyResult<Mv> {
        let table = &core.moves.roles[role];
        if let Ok(i) = m.cast::<PyInt>() {
            let id: i64 = i.extract()?;
            return usize::try_from(id)
                .ok()
                .and_then(|id| table.moves.get(id))
                .copied()
                .ok_or_else(|| PyValueError::new_err(format!("no move {id} for role {role}")));
        }
        let Ok(name) = m.cast::<PyString>() else {
            return Err(PyTypeError::new_err("a move is an id (int) or a name (str)"));
        };
        let name = name.to_cow()?;
        if let Some(&id) = table.by_name.get(name.as_ref()) {
            return Ok(table.moves[id as usize]);
        }
        let canon = canonical(&name);
        if let Some(&id) = table.by_name.get(&canon) {
            return Ok(table.moves[id as usize]);
        }
        match core.machine.prover_term(&canon) {
            Some(t) => {
                let mv = Mv::Term(t.map_err(|e| PyValueError::new_err(e.to_string()))?);
                core.moves.id_of(role, mv, || canon.clone());
                Ok(mv)
            }
            None => Err(PyValueError::new_err(format!("`{name}` is not a move of role {role}"))),
        }
    }

    /// Legal move ids of `role` in `s`, numbering the prover's new moves.
    fn legal_ids(&self, core: &mut Core, s: &Repr, role: usize) -> PyResult<Vec<u32>> {
        let Core { machine, moves, legal, .. } = core;
        machine.legal(s, role, legal).map_err(machine_error)?;
        let mut ids = Vec::with_capacity(legal.len());
        for &mv in legal.iter() {
            let id = match moves.roles[role].by_move.get(&mv) {
                Some(&id) => id,
                None => {
                    let name = machine.move_kif(mv).map_err(machine_error)?;
                    moves.id_of(role, mv, || name)
                }
            };
            ids.push(id);
        }
        Ok(ids)
    }

    fn move_strings<'py>(
        &self,
        py: Python<'py>,
        core: &Core,
        role: usize,
        ids: &[u32],
    ) -> PyResult<Bound<'py, PyList>> {
        match self.shared.py_moves.get(role) {
            Some(names) => PyList::new(py, ids.iter().map(|&i| names[i as usize].bind(py))),
            None => PyList::new(py, ids.iter().map(|&i| core.moves.roles[role].names[i as usize].as_str())),
        }
    }
}

#[pymethods]
impl Game {
    /// The game's name: the file it was read from, or `<text>`.
    #[getter]
    fn name(&self) -> &str {
        &self.shared.source.name
    }

    /// The game's name from its rules (the first line of the comment
    /// before the first form, else the file's stem): what `propel match`
    /// and the tournament's records call it.
    #[getter]
    fn title(&self) -> String {
        let s = &self.shared.source;
        propel_compiler::game_title(&String::from_utf8_lossy(&s.text), &s.name)
    }

    /// The rules as loaded.
    #[getter]
    fn text<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
        pyo3::types::PyBytes::new(py, &self.shared.source.text)
    }

    /// The machine it runs on: "prover", "propnet" or "jit".
    #[getter]
    fn machine(&self) -> &'static str {
        self.shared.source.kind.name()
    }

    /// Role names in declaration order (a joint move lists one move per
    /// role in this order).
    #[getter]
    fn roles(&self) -> Vec<String> {
        self.shared.roles.clone()
    }

    /// Warnings from validation (rules that can never fire, ...).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.shared.warnings.clone()
    }

    /// The base propositions (canonical KIF), in observation order.
    /// Networks only: the prover raises PropelError.
    #[getter]
    fn base_names(&self) -> PyResult<Vec<String>> {
        Ok(self.bases()?.to_vec())
    }

    /// How many moves `role` has in all (ids are 0..num_moves). Networks only.
    fn num_moves(&self, role: &Bound<'_, PyAny>) -> PyResult<usize> {
        let r = self.role(role)?;
        let core = self.shared.lock();
        self.complete_moves(&core)?;
        Ok(core.moves.roles[r].names.len())
    }

    /// `role`'s moves by id (canonical KIF). For the prover: the moves met so far.
    fn move_names(&self, role: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        let r = self.role(role)?;
        Ok(self.shared.lock().moves.roles[r].names.clone())
    }

    /// The id of move `name` of `role` (any spacing and case).
    fn move_id(&self, role: &Bound<'_, PyAny>, name: &Bound<'_, PyAny>) -> PyResult<u32> {
        let r = self.role(role)?;
        let mut core = self.shared.lock();
        let mv = Game::parse_move(&mut core, r, name)?;
        let name = core.machine.move_kif(mv).map_err(machine_error)?;
        Ok(core.moves.id_of(r, mv, || name))
    }

    /// The name (canonical KIF) of `role`'s move `id`.
    fn move_name(&self, role: &Bound<'_, PyAny>, id: usize) -> PyResult<String> {
        let r = self.role(role)?;
        let core = self.shared.lock();
        core.moves.roles[r]
            .names
            .get(id)
            .cloned()
            .ok_or_else(|| PyValueError::new_err(format!("no move {id} for role {r}")))
    }

    /// The initial state.
    fn initial_state(&self) -> PyResult<State> {
        let repr = self.shared.lock().machine.initial_state().map_err(machine_error)?;
        Ok(self.new_state(repr))
    }

    fn is_terminal(&self, state: &Bound<'_, State>) -> PyResult<bool> {
        let s = self.state(state)?;
        self.shared.lock().machine.is_terminal(s).map_err(machine_error)
    }

    /// `role`'s legal moves in `state`, as names (canonical KIF).
    fn legal_moves<'py>(
        &self,
        py: Python<'py>,
        state: &Bound<'_, State>,
        role: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let (s, r) = (self.state(state)?, self.role(role)?);
        let mut core = self.shared.lock();
        let ids = self.legal_ids(&mut core, s, r)?;
        self.move_strings(py, &core, r, &ids)
    }

    /// `role`'s legal moves in `state`, as ids.
    fn legal_move_ids(&self, state: &Bound<'_, State>, role: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
        let (s, r) = (self.state(state)?, self.role(role)?);
        let mut core = self.shared.lock();
        self.legal_ids(&mut core, s, r)
    }

    /// The state after `joint`: one legal move per role, in role order,
    /// each an id or a name. Raises ValueError for an illegal move.
    fn next_state(&self, state: &Bound<'_, State>, joint: &Bound<'_, PyAny>) -> PyResult<State> {
        let s = self.state(state)?;
        let roles = self.shared.roles.len();
        let mut core = self.shared.lock();
        let mut mvs: Vec<Mv> = Vec::with_capacity(roles);
        for (r, m) in joint.try_iter()?.enumerate() {
            if r >= roles {
                return Err(PyValueError::new_err(format!("a joint move has one move per role ({roles})")));
            }
            let mv = Game::parse_move(&mut core, r, &m?)?;
            let Core { machine, legal, .. } = &mut *core;
            machine.legal(s, r, legal).map_err(machine_error)?;
            if !legal.contains(&mv) {
                let name = machine.move_kif(mv).unwrap_or_default();
                return Err(PyValueError::new_err(format!(
                    "`{name}` is not legal for role `{}` in this state",
                    self.shared.roles[r]
                )));
            }
            mvs.push(mv);
        }
        if mvs.len() != roles {
            return Err(PyValueError::new_err(format!(
                "a joint move has one move per role ({roles}), got {}",
                mvs.len()
            )));
        }
        let next = core.machine.next(s, &mvs).map_err(machine_error)?;
        Ok(self.new_state(next))
    }

    /// Each role's goal in `state`, in role order (0..100; a role the rules
    /// give no goal counts 0, one given several the largest).
    fn goals(&self, state: &Bound<'_, State>) -> PyResult<Vec<u32>> {
        let s = self.state(state)?;
        let mut core = self.shared.lock();
        let Core { machine, values, .. } = &mut *core;
        (0..self.shared.roles.len())
            .map(|r| {
                machine.goal_values(s, r, values).map_err(machine_error)?;
                Ok(values.last().map_or(0, |&v| v as u32))
            })
            .collect()
    }

    /// The state's facts (canonical KIF), sorted.
    fn state_facts(&self, state: &Bound<'_, State>) -> PyResult<Vec<String>> {
        let s = self.state(state)?;
        self.shared.lock().machine.state_kif(s).map_err(machine_error)
    }

    /// The state made of `facts` (canonical KIF, any spacing and case).
    pub(crate) fn state_from_facts(&self, facts: Vec<String>) -> PyResult<State> {
        let facts: Vec<String> = facts.iter().map(|f| canonical(f)).collect();
        let repr = self
            .shared
            .lock()
            .machine
            .state_from_kif(&facts, &self.shared.base_index)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(self.new_state(repr))
    }

    /// The base propositions of `state` as a 0/1 vector (uint8, in
    /// `base_names` order). Networks only.
    fn observation<'py>(&self, py: Python<'py>, state: &Bound<'_, State>) -> PyResult<Bound<'py, PyAny>> {
        let n = self.bases()?.len();
        let s = self.state(state)?;
        numpy::u8_array(py, batch::observations(&[s], n), &[n])
    }

    /// `observation` of each state, as one (len(states), bases) uint8 array.
    fn observations<'py>(&self, py: Python<'py>, states: Vec<Bound<'py, State>>) -> PyResult<Bound<'py, PyAny>> {
        let n = self.bases()?.len();
        let reprs = states.iter().map(|s| self.state(s)).collect::<PyResult<Vec<_>>>()?;
        let bytes = py.detach(|| batch::observations(&reprs, n));
        numpy::u8_array(py, bytes, &[states.len(), n])
    }

    /// A bool vector over `role`'s move ids, true where legal in `state`.
    /// Networks only.
    fn legal_mask<'py>(
        &self,
        py: Python<'py>,
        state: &Bound<'py, State>,
        role: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let masks = self.legal_masks(py, vec![state.clone()], role)?;
        masks.get_item(0)
    }

    /// `legal_mask` of each state, as one (len(states), num_moves) bool array.
    fn legal_masks<'py>(
        &self,
        py: Python<'py>,
        states: Vec<Bound<'py, State>>,
        role: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let r = self.role(role)?;
        let reprs = states.iter().map(|s| self.state(s)).collect::<PyResult<Vec<_>>>()?;
        let mut core = self.shared.lock();
        self.complete_moves(&core)?;
        let ids = core.moves.roles[r].names.len();
        let Core { machine, moves, .. } = &mut *core;
        let table = &moves.roles[r].by_move;
        let bytes = batch::masks(machine, &reprs, r, ids, |mv| table.get(&mv).copied()).map_err(machine_error)?;
        drop(core);
        numpy::bool_array(py, bytes, &[states.len(), ids])
    }

    /// `n` random playouts from `state` (the initial state by default) on
    /// `threads` threads, without the GIL. Returns `(goals, lengths)`:
    /// goals an (n, roles) int32 array (the largest goal value the rules
    /// give; -1 where they give none), lengths an (n,) uint32 array of
    /// joint moves. On the JIT, whole playouts run in native code, on the
    /// bit-parallel lanes where the code has them. A playout longer than
    /// `max_steps` raises MachineError. Same seed, machine and threads:
    /// same results.
    #[pyo3(signature = (n, state=None, threads=1, seed=None, max_steps=100_000))]
    fn random_playouts<'py>(
        &self,
        py: Python<'py>,
        n: usize,
        state: Option<&Bound<'_, State>>,
        threads: usize,
        seed: Option<u64>,
        max_steps: u32,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let roles = self.shared.roles.len();
        let threads = threads.clamp(1, n.clamp(1, MAX_THREADS));
        let s = match state {
            Some(st) => self.state(st)?.clone(),
            None => self.shared.lock().machine.initial_state().map_err(machine_error)?,
        };
        let mut machines = self.shared.take_spares(threads);
        let seed = seed.unwrap_or_else(fresh_seed);
        let out = py.detach(|| batch::playouts(&mut machines, &s, n, seed, max_steps));
        self.shared.give_back(machines);
        let out = out.map_err(machine_error)?;
        let goals = numpy::i32_array(py, &out.goals, &[n, roles])?;
        let lengths = numpy::u32_array(py, &out.lengths, &[n])?;
        PyTuple::new(py, [goals, lengths])
    }

    /// Propel's MCTS from `state` for `seconds` on `threads` threads (the
    /// one the player uses, without the meta-game analysis), without the
    /// GIL. Returns, per role, `(move id, move name, value, visits)` of the
    /// move it would play; the value on the goals' scale, 0..100, as
    /// `propel search` prints it.
    #[pyo3(signature = (state, seconds=1.0, threads=1, seed=None))]
    fn search(
        &self,
        py: Python<'_>,
        state: &Bound<'_, State>,
        seconds: f64,
        threads: usize,
        seed: Option<u64>,
    ) -> PyResult<Vec<(u32, String, f64, u32)>> {
        let time = self::seconds("seconds", seconds)?;
        let s = self.state(state)?.clone();
        let machine = self.shared.lock().machine.clone();
        let seed = seed.unwrap_or_else(fresh_seed);
        let best = py
            .detach(|| crate::search::search(machine, s, time, threads.clamp(1, MAX_THREADS), seed))
            .map_err(machine_error)?;
        let mut core = self.shared.lock();
        let mut out = Vec::with_capacity(best.len());
        for (r, (mv, value, visits)) in best.into_iter().enumerate() {
            let name = core.machine.move_kif(mv).map_err(machine_error)?;
            let n2 = name.clone();
            let id = core.moves.id_of(r, mv, || n2);
            out.push((id, name, 100.0 * value, visits));
        }
        Ok(out)
    }

    /// For measurement only (docs/python.md, "Per-call overhead"): `n`
    /// random steps in Rust doing the work the Python API does for
    /// `is_terminal`, `legal_move_ids` of every role, and `next_state` (ids
    /// looked up, each move's legality checked), from the initial state
    /// again whenever a game ends. Returns the seconds taken.
    #[pyo3(signature = (n, seed=1))]
    fn _bench_steps(&self, n: usize, seed: u64) -> PyResult<f64> {
        let roles = self.shared.roles.len();
        let mut core = self.shared.lock();
        let mut rng = propel_runtime::Rng::new(seed);
        let s0 = core.machine.initial_state().map_err(machine_error)?;
        let mut s = s0.clone();
        let mut joint = Vec::with_capacity(roles);
        let t = std::time::Instant::now();
        for _ in 0..n {
            if core.machine.is_terminal(&s).map_err(machine_error)? {
                s = s0.clone();
            }
            joint.clear();
            for r in 0..roles {
                let ids = self.legal_ids(&mut core, &s, r)?;
                let id = ids[rng.below(ids.len())];
                joint.push(core.moves.roles[r].moves[id as usize]);
            }
            for (r, mv) in joint.iter().enumerate() {
                let Core { machine, legal, .. } = &mut *core;
                machine.legal(&s, r, legal).map_err(machine_error)?;
                if !legal.contains(mv) {
                    return Err(PropelError::new_err("an illegal move in a random step"));
                }
            }
            s = core.machine.next(&s, &joint).map_err(machine_error)?;
        }
        Ok(t.elapsed().as_secs_f64())
    }

    fn __repr__(&self) -> String {
        format!(
            "<propel.Game {} on {}: roles {}>",
            self.shared.source.name,
            self.shared.source.kind.name(),
            self.shared.roles.join(", ")
        )
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Game>().is_ok_and(|g| Arc::ptr_eq(&g.get().shared, &self.shared))
    }

    fn __hash__(&self) -> u64 {
        Arc::as_ptr(&self.shared) as usize as u64
    }

    /// Shared by all its handles: a copy is the object itself.
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }

    /// Pickles as the game's text and load options; unpickling in a
    /// process that already holds the same game reuses it.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let f = py.import("propel._propel")?.getattr("_restore_game")?;
        let s = &self.shared.source;
        let args =
            (s.name.clone(), pyo3::types::PyBytes::new(py, &s.text), s.kind.name(), s.ground_seconds, s.passes.clone());
        PyTuple::new(py, [f, args.into_pyobject(py)?.into_any()])
    }
}

#[pymethods]
impl State {
    /// The game this state belongs to.
    #[getter]
    fn game(&self) -> Game {
        Game { shared: self.game.clone() }
    }

    /// The state's facts (canonical KIF), sorted.
    #[getter]
    fn facts(&self) -> PyResult<Vec<String>> {
        self.game.lock().machine.state_kif(&self.repr).map_err(machine_error)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<State>().is_ok_and(|o| {
            let o = o.get();
            Arc::ptr_eq(&o.game, &self.game) && o.repr == self.repr
        })
    }

    fn __hash__(&self) -> u64 {
        let mut h = rustc_hash::FxHasher::default();
        self.repr.hash(&mut h);
        h.finish()
    }

    fn __repr__(&self) -> String {
        let n = match &self.repr {
            Repr::Net(s) => s.bits().iter().map(|w| w.count_ones() as usize).sum(),
            Repr::Prover(s) => s.facts().len(),
            Repr::TopDown(s) => s.facts().len(),
        };
        format!("<propel.State of {}: {n} facts>", self.game.source.name)
    }

    /// Immutable: a copy is the object itself.
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }

    /// Pickles as its game and facts.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let f = py.import("propel._propel")?.getattr("_restore_state")?;
        let game = Bound::new(py, Game { shared: self.game.clone() })?;
        let facts = self.facts()?;
        PyTuple::new(py, [f, (game, facts).into_pyobject(py)?.into_any()])
    }
}
