//! Top-down evaluation with tabling: one question about one state,
//! answered by reading only what that question needs.
//!
//! Rules written for a top-down prover, such as chess's
//! `threatened_with_capture` (is this square attacked, ignoring that one,
//! once that piece is captured?), are cheap when called with their
//! arguments bound and enormous when derived in full. The grounder cannot
//! expand them; a network keeps a *query component* in their place
//! ([`crate::queries`]) whose value this evaluator computes on the current
//! state when the network asks.
//!
//! - **Calls are tabled** (memoised) by relation and the arguments bound
//!   at the call; an argument only partly bound counts as free, and the
//!   answers are matched against it. Tables of state relations last one
//!   state, tables of static relations for good.
//! - **Recursion** runs to a fixpoint (linear tabling): a call that meets a
//!   call still running reads the answers found so far, and the oldest
//!   call of such a group runs again until no table gains an answer; then
//!   the whole group is complete.
//! - **A call with every argument bound** stops at its first answer.
//! - **Literal order**: cheap tests first (`distinct`, a bound `true` or
//!   static literal), otherwise the rule's own order, with negations and
//!   `distinct` waiting until their variables are bound.
//!
//! Negation reads complete tables only: the rules are stratified, so a
//! negated call never depends on the call that asks it.
//!
//! A state is set with [`TopDown::set_state`], a joint move with
//! [`TopDown::set_moves`] (read by `does`): every output of the game can
//! be asked, so the evaluator is a whole reasoner too.

mod resolve;

use crate::game::{Game, Layer, Lit, Pat, RelId};
use crate::symbol::Sym;
use crate::term::{TermId, TermPool, TooDeep};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::sync::Arc;

const UNBOUND: TermId = TermId(u32::MAX);

/// Why a question could not be answered. `relation` names the relation
/// being evaluated, as written in the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("more than {limit} steps while evaluating `{relation}` top-down")]
    TooMuchWork { relation: String, limit: u64 },
    #[error("calls nested deeper than {MAX_DEPTH} while evaluating `{relation}` top-down")]
    TooDeep { relation: String },
    #[error("rules build terms nested deeper than {} levels (in `{relation}`)", crate::term::MAX_TERM_DEPTH)]
    TermTooDeep { relation: String },
    #[error("a variable of a rule of `{relation}` is unbound where it is tested")]
    Unbound { relation: String },
}

/// Most calls running inside one another: deeper recursion is an error.
/// Each call runs on the Rust stack (about 1.5 KB a call, so a thread's
/// default 2 MiB holds some 1,300); the stack is grown on the heap as it
/// runs low ([`STACK_RED_ZONE`]).
const MAX_DEPTH: usize = 100_000;

/// Stack left below which a call continues on a new piece of stack
/// ([`STACK_GROWTH`] bytes, on the heap).
const STACK_RED_ZONE: usize = 128 * 1024;
const STACK_GROWTH: usize = 4 * 1024 * 1024;

/// Work (literal steps) one question may take before it is an error.
pub const MAX_STEPS: u64 = 200_000_000;

#[derive(Clone, Debug)]
enum TPat {
    Var(u32),
    /// A ground subterm, built once.
    Ground(TermId),
    App(Sym, Box<[TPat]>),
}

#[derive(Clone, Debug)]
enum TLit {
    Pos(RelId, Box<[TPat]>),
    Neg(RelId, Box<[TPat]>),
    Distinct(TPat, TPat),
    Same(TPat, TPat),
}

#[derive(Clone, Debug)]
struct TClause {
    head: Box<[TPat]>,
    body: Box<[TLit]>,
    /// The variables of each body literal.
    vars: Box<[Box<[u32]>]>,
    nvars: usize,
}

/// A question asked of a state: a conjunction of literals over the game's
/// relations with some variables given (`params`), true when some values
/// of the others satisfy it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Question {
    pub body: Vec<Lit>,
    /// The variables whose values the asker gives, in argument order.
    pub params: Vec<u32>,
    /// Variables in `body` (numbered `0..nvars`).
    pub nvars: usize,
}

/// A game's rules compiled for top-down evaluation, with questions asked
/// of it: read-only, shared by every evaluator of the game.
#[derive(Debug)]
pub struct Rules {
    clauses: Vec<TClause>,
    /// The clauses of each relation; the game's relations first, then one
    /// relation per question.
    of_rel: Vec<Vec<u32>>,
    layer: Vec<Layer>,
    arity: Vec<usize>,
    names: Vec<String>,
    relations: usize,
    /// The rules' constants (every evaluator starts from a copy).
    pool: TermPool,
    symbols: crate::symbol::SymbolTable,
}

fn compile_pat(pool: &mut TermPool, p: &Pat) -> Result<TPat, TooDeep> {
    Ok(match p {
        Pat::Var(v) => TPat::Var(*v),
        Pat::Const(s) => TPat::Ground(pool.constant(*s)),
        Pat::App(f, args) => {
            let args = args.iter().map(|a| compile_pat(pool, a)).collect::<Result<Vec<_>, _>>()?;
            let ground: Option<Vec<TermId>> = args
                .iter()
                .map(|a| match a {
                    TPat::Ground(t) => Some(*t),
                    _ => None,
                })
                .collect();
            match ground {
                Some(g) => TPat::Ground(pool.app(*f, &g)?),
                None => TPat::App(*f, args.into()),
            }
        }
    })
}

/// A body's literals, and the variables of each.
type Body = (Box<[TLit]>, Box<[Box<[u32]>]>);

fn compile_body(pool: &mut TermPool, body: &[Lit]) -> Result<Body, TooDeep> {
    let mut lits = Vec::with_capacity(body.len());
    for l in body {
        // A `does` atom reads the move's facts, `(does role move)`, as a
        // `true` atom reads the state's.
        let args = |pool: &mut TermPool, a: &crate::game::AtomPat| -> Result<Box<[TPat]>, TooDeep> {
            if a.rel == RelId::DOES {
                return Ok(Box::new([compile_pat(pool, &Pat::App(Sym::DOES, a.args.clone()))?]));
            }
            Ok(a.args.iter().map(|p| compile_pat(pool, p)).collect::<Result<Vec<_>, _>>()?.into())
        };
        lits.push(match l {
            Lit::Pos(a) => TLit::Pos(a.rel, args(pool, a)?),
            Lit::Neg(a) => TLit::Neg(a.rel, args(pool, a)?),
            Lit::Distinct(x, y) => TLit::Distinct(compile_pat(pool, x)?, compile_pat(pool, y)?),
            Lit::Same(x, y) => TLit::Same(compile_pat(pool, x)?, compile_pat(pool, y)?),
        });
    }
    Ok((lits.into(), body.iter().map(|l| l.vars().into()).collect()))
}

/// Most body literals of a clause (the literals left are a bit mask): a
/// longer rule is evaluated as a chain of parts.
const MAX_LITERALS: usize = 64;

/// [`Rules`] under construction.
struct Builder {
    pool: TermPool,
    clauses: Vec<TClause>,
    of_rel: Vec<Vec<u32>>,
    layer: Vec<Layer>,
    arity: Vec<usize>,
    names: Vec<String>,
}

impl Builder {
    fn lit_layer(&self, l: &Lit) -> Layer {
        match l {
            Lit::Pos(a) | Lit::Neg(a) if a.rel == RelId::TRUE => Layer::State,
            Lit::Pos(a) | Lit::Neg(a) if a.rel == RelId::DOES => Layer::Move,
            Lit::Pos(a) | Lit::Neg(a) => self.layer[a.rel.index()],
            _ => Layer::Static,
        }
    }

    /// Adds the clause `rel(head) ⇐ body`. A body longer than
    /// [`MAX_LITERALS`] keeps its first literals (positive ones first, so
    /// that each part binds what its tests read) and hands the rest to a
    /// part of its own over every variable of the clause.
    fn add(&mut self, rel: usize, head: &[Pat], mut body: Vec<Lit>, nvars: usize) -> Result<(), QueryError> {
        let name = self.names[rel].clone();
        if body.len() > MAX_LITERALS {
            body.sort_by_key(|l| !matches!(l, Lit::Pos(_)));
            let rest = body.split_off(MAX_LITERALS - 1);
            let part = self.of_rel.len();
            let vars: Vec<Pat> = (0..nvars as u32).map(Pat::Var).collect();
            self.of_rel.push(Vec::new());
            self.layer.push(rest.iter().map(|l| self.lit_layer(l)).max().unwrap_or(Layer::Static));
            self.arity.push(nvars);
            self.names.push(name.clone());
            self.add(part, &vars, rest, nvars)?;
            body.push(Lit::Pos(crate::game::AtomPat { rel: RelId(part as u32), args: vars.into() }));
        }
        let deep = |_| QueryError::TermTooDeep { relation: name.clone() };
        let head = head.iter().map(|p| compile_pat(&mut self.pool, p)).collect::<Result<Vec<_>, _>>().map_err(deep)?;
        let (body, vars) = compile_body(&mut self.pool, &body).map_err(deep)?;
        self.of_rel[rel].push(self.clauses.len() as u32);
        self.clauses.push(TClause { head: head.into(), body, vars, nvars });
        Ok(())
    }
}

impl Rules {
    /// The rules of `game`, and `questions` to be asked with
    /// [`TopDown::ask`]. An error when a constant term nests too deep.
    pub fn new(game: &Game, questions: &[Question]) -> Result<Rules, QueryError> {
        let n = game.relations.len();
        let mut b = Builder {
            pool: TermPool::new(),
            clauses: Vec::with_capacity(game.clauses.len() + questions.len()),
            of_rel: vec![Vec::new(); n + questions.len()],
            layer: game.relations.iter().map(|r| r.layer).collect(),
            arity: game.relations.iter().map(|r| r.arity).collect(),
            names: (0..n).map(|r| game.rel_name(RelId(r as u32)).to_string()).collect(),
        };
        for (k, q) in questions.iter().enumerate() {
            let l = q.body.iter().map(|l| b.lit_layer(l)).max().unwrap_or(Layer::Static);
            b.layer.push(l);
            b.arity.push(q.params.len());
            b.names.push(format!("question {k}"));
        }
        for c in &game.clauses {
            b.add(c.head.rel.index(), &c.head.args, c.body.clone(), c.var_names.len())?;
        }
        for (k, q) in questions.iter().enumerate() {
            let head: Vec<Pat> = q.params.iter().map(|&v| Pat::Var(v)).collect();
            b.add(n + k, &head, q.body.clone(), q.nvars)?;
        }
        let Builder { pool, clauses, of_rel, layer, arity, names, .. } = b;
        Ok(Rules { clauses, of_rel, layer, arity, names, relations: n, pool, symbols: game.symbols.clone() })
    }
}

/// A table's progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    New,
    /// Running, at this depth of the call stack.
    Active(u32),
    /// Evaluated in pass `epoch` while depending on the call at depth
    /// `low`, still running: that call's group is not complete yet.
    Incomplete {
        epoch: u32,
        low: u32,
    },
    Complete,
}

#[derive(Clone, Debug)]
struct Table {
    rel: RelId,
    /// The call's arguments, [`UNBOUND`] where free.
    key: SmallVec<[TermId; 8]>,
    /// Every argument bound: one answer is all there is.
    boolean: bool,
    found: bool,
    /// Answers, flat (arity terms each); unused when `boolean`.
    answers: Vec<TermId>,
    seen: FxHashSet<SmallVec<[TermId; 8]>>,
    status: Status,
}

type Key = (RelId, SmallVec<[TermId; 8]>);

/// One layer's tables. Cleared for each state (or move), they keep their
/// storage: `list[..used]` are the live tables, the rest are old ones
/// whose vectors are filled again rather than allocated.
#[derive(Clone, Debug, Default)]
struct Tables {
    index: FxHashMap<Key, u32>,
    list: Vec<Table>,
    used: usize,
}

impl Tables {
    fn clear(&mut self) {
        self.index.clear();
        self.used = 0;
    }

    /// A new table for the call `key`, numbered.
    fn add(&mut self, key: Key) -> u32 {
        let boolean = key.1.iter().all(|&a| a != UNBOUND);
        let n = self.used as u32;
        if self.used == self.list.len() {
            self.list.push(Table {
                rel: key.0,
                key: SmallVec::new(),
                boolean,
                found: false,
                answers: Vec::new(),
                seen: FxHashSet::default(),
                status: Status::New,
            });
        }
        let t = &mut self.list[self.used];
        t.rel = key.0;
        t.key.clone_from(&key.1);
        t.boolean = boolean;
        t.found = false;
        t.answers.clear();
        t.seen.clear();
        t.status = Status::New;
        self.used += 1;
        self.index.insert(key, n);
        n
    }
}

/// A table's number: the layer of its relation (static, state, move) in
/// the top two bits, its index among that layer's tables below.
const LAYER_SHIFT: u32 = 30;

fn layer_index(l: Layer) -> usize {
    match l {
        Layer::Static => 0,
        Layer::State => 1,
        Layer::Move => 2,
    }
}

/// The facts of a state, indexed by functor and by each argument: lists
/// in one arena, so that a literal reads a list by number while it binds.
#[derive(Clone, Debug, Default)]
struct Facts {
    set: FxHashSet<TermId>,
    lists: Vec<Vec<TermId>>,
    /// List 0 holds every fact.
    by_functor: FxHashMap<Sym, u32>,
    by_arg: FxHashMap<(Sym, u32, TermId), u32>,
}

/// The list of no facts.
const NO_FACTS: u32 = u32::MAX;

impl Facts {
    fn load(&mut self, pool: &TermPool, facts: &[TermId]) {
        self.set.clear();
        self.set.extend(facts.iter().copied());
        self.by_functor.clear();
        self.by_arg.clear();
        // Lists are kept, emptied, to be filled again without allocating.
        self.lists.iter_mut().for_each(Vec::clear);
        let mut used = 1;
        if self.lists.is_empty() {
            self.lists.push(Vec::new());
        }
        let mut list = |lists: &mut Vec<Vec<TermId>>, slot: &mut u32, f: TermId| {
            if *slot == NO_FACTS {
                *slot = used;
                used += 1;
                if lists.len() < used as usize {
                    lists.push(Vec::new());
                }
            }
            lists[*slot as usize].push(f);
        };
        for &f in facts {
            self.lists[0].push(f);
            let functor = pool.functor(f);
            list(&mut self.lists, self.by_functor.entry(functor).or_insert(NO_FACTS), f);
            for (i, &a) in pool.args(f).iter().enumerate() {
                list(&mut self.lists, self.by_arg.entry((functor, i as u32, a)).or_insert(NO_FACTS), f);
            }
        }
    }

    fn len(&self, l: u32) -> usize {
        self.lists.get(l as usize).map_or(0, Vec::len)
    }
}

/// Facts that may match a `true` literal: one fact, or a list.
enum Candidates {
    None,
    One(TermId),
    List(u32),
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    /// The lowest depth of a running call this one has read.
    low: u32,
    /// Whether some call read this one while it ran.
    hit: bool,
}

/// One evaluator (per thread): its own terms, state and tables.
#[derive(Clone, Debug)]
pub struct TopDown {
    rules: Arc<Rules>,
    pool: TermPool,
    facts: Facts,
    /// The joint move's `does` atoms, as terms `(does role move)`.
    moves: Facts,
    /// Tables by layer: static ones last for good, state ones for one
    /// state, move ones for one joint move.
    tables: [Tables; 3],
    binds: Vec<TermId>,
    trail: Vec<u32>,
    stack: Vec<Frame>,
    /// Tables evaluated while a call below them ran (their group's members).
    group: Vec<u32>,
    epoch: u32,
    /// Answers added so far (a leader runs again while this grows).
    added: u64,
    steps: u64,
    max_steps: u64,
}

impl TopDown {
    pub fn new(rules: Arc<Rules>) -> TopDown {
        TopDown {
            pool: rules.pool.clone(),
            rules,
            facts: Facts::default(),
            moves: Facts::default(),
            tables: Default::default(),
            binds: Vec::new(),
            trail: Vec::new(),
            stack: Vec::new(),
            group: Vec::new(),
            epoch: 0,
            added: 0,
            steps: 0,
            max_steps: MAX_STEPS,
        }
    }

    /// At most `steps` literal steps per question.
    pub fn with_max_steps(mut self, steps: u64) -> TopDown {
        self.max_steps = steps;
        self
    }

    /// The evaluator's terms: build the facts and arguments it is given here.
    pub fn pool_mut(&mut self) -> &mut TermPool {
        &mut self.pool
    }

    /// The term `t` of this evaluator in canonical KIF.
    pub fn kif(&self, t: TermId) -> String {
        self.pool.to_kif(t, &self.rules.symbols)
    }

    /// `text` in KIF as a term of this evaluator (see [`TermPool::parse_kif`]).
    pub fn term_from_kif(&mut self, text: &str) -> Result<TermId, String> {
        let rules = self.rules.clone();
        self.pool.parse_kif(&rules.symbols, text)
    }

    /// Makes `facts` (the arguments of `true`) the current state, with no
    /// move; the tables of state and move relations are dropped.
    pub fn set_state(&mut self, facts: &[TermId]) {
        self.facts.load(&self.pool, facts);
        self.moves.load(&self.pool, &[]);
        for l in [Layer::State, Layer::Move] {
            self.tables[layer_index(l)].clear();
        }
    }

    /// Makes `joint` (a role and its move, each a term) the current move;
    /// the tables of move relations are dropped.
    pub fn set_moves(&mut self, joint: &[(TermId, TermId)]) -> Result<(), QueryError> {
        let mut does = Vec::with_capacity(joint.len());
        for &(r, m) in joint {
            let t = self.pool.app(Sym::DOES, &[r, m]);
            does.push(t.map_err(|TooDeep| QueryError::TermTooDeep { relation: "does".into() })?);
        }
        self.moves.load(&self.pool, &does);
        self.tables[layer_index(Layer::Move)].clear();
        Ok(())
    }

    /// Whether question `q` holds in the current state with its parameters
    /// given the values `args`.
    pub fn ask(&mut self, q: usize, args: &[TermId]) -> Result<bool, QueryError> {
        let rel = RelId((self.rules.relations + q) as u32);
        self.holds(rel, args)
    }

    /// Whether the ground atom `rel(args)` holds in the current state.
    pub fn holds(&mut self, rel: RelId, args: &[TermId]) -> Result<bool, QueryError> {
        self.steps = 0;
        let rules = self.rules.clone();
        let key: SmallVec<[TermId; 8]> = args.iter().copied().collect();
        let t = self.call(&rules, rel, key).inspect_err(|_| self.reset())?;
        Ok(self.table(t).found)
    }

    /// Every answer of `rel` in the current state whose arguments equal
    /// `key` where it gives one (`None`: any), as rows of arguments.
    pub fn answers(&mut self, rel: RelId, key: &[Option<TermId>]) -> Result<Vec<Vec<TermId>>, QueryError> {
        self.steps = 0;
        let rules = self.rules.clone();
        let k: SmallVec<[TermId; 8]> = key.iter().map(|t| t.unwrap_or(UNBOUND)).collect();
        let t = self.call(&rules, rel, k).inspect_err(|_| self.reset())?;
        let tab = self.table(t);
        if tab.boolean {
            return Ok(if tab.found { vec![key.iter().map(|t| t.unwrap_or(UNBOUND)).collect()] } else { Vec::new() });
        }
        let a = rules.arity[rel.index()].max(1);
        Ok(tab.answers.chunks(a).map(|r| r.to_vec()).collect())
    }

    /// After an error: no table is trusted, static ones included.
    fn reset(&mut self) {
        self.tables = Default::default();
        self.binds.clear();
        self.trail.clear();
        self.stack.clear();
        self.group.clear();
    }

    fn table(&self, t: u32) -> &Table {
        &self.tables[(t >> LAYER_SHIFT) as usize].list[(t & ((1 << LAYER_SHIFT) - 1)) as usize]
    }

    fn table_mut(&mut self, t: u32) -> &mut Table {
        &mut self.tables[(t >> LAYER_SHIFT) as usize].list[(t & ((1 << LAYER_SHIFT) - 1)) as usize]
    }

    fn tick(&mut self, rules: &Rules, rel: RelId) -> Result<(), QueryError> {
        self.steps += 1;
        if self.steps > self.max_steps {
            return Err(QueryError::TooMuchWork { relation: rules.names[rel.index()].clone(), limit: self.max_steps });
        }
        Ok(())
    }

    /// The table of the call `rel(key)`, evaluated as far as it can be now.
    fn call(&mut self, rules: &Rules, rel: RelId, key: SmallVec<[TermId; 8]>) -> Result<u32, QueryError> {
        let layer = layer_index(rules.layer[rel.index()]);
        let tables = &mut self.tables[layer];
        let k = (rel, key);
        let t = match tables.index.get(&k) {
            Some(&t) => t,
            None => tables.add(k),
        } | (layer as u32) << LAYER_SHIFT;
        match self.table(t).status {
            Status::Complete => {}
            Status::Active(d) => {
                self.lower(d);
                self.stack[d as usize].hit = true;
            }
            Status::Incomplete { epoch, low } if epoch == self.epoch => self.lower(low),
            Status::New | Status::Incomplete { .. } => {
                stacker::maybe_grow(STACK_RED_ZONE, STACK_GROWTH, || self.evaluate(rules, t))?
            }
        }
        Ok(t)
    }

    /// The running call on top depends on the call at depth `d`.
    fn lower(&mut self, d: u32) {
        if let Some(top) = self.stack.last_mut() {
            top.low = top.low.min(d);
        }
    }

    fn done(&self, t: u32) -> bool {
        let tab = self.table(t);
        tab.boolean && tab.found
    }

    fn evaluate(&mut self, rules: &Rules, t: u32) -> Result<(), QueryError> {
        let depth = self.stack.len() as u32;
        if depth as usize >= MAX_DEPTH {
            let rel = self.table(t).rel;
            return Err(QueryError::TooDeep { relation: rules.names[rel.index()].clone() });
        }
        self.stack.push(Frame { low: depth, hit: false });
        self.table_mut(t).status = Status::Active(depth);
        let mark = self.group.len();
        let (rel, key) = {
            let tab = self.table(t);
            (tab.rel, tab.key.clone())
        };
        loop {
            let before = self.added;
            for &ci in &rules.of_rel[rel.index()] {
                if self.done(t) {
                    break;
                }
                let c = &rules.clauses[ci as usize];
                let base = self.binds.len();
                self.binds.resize(base + c.nvars, UNBOUND);
                let tmark = self.trail.len();
                let mut ok = true;
                for (p, &a) in c.head.iter().zip(key.iter()) {
                    if a != UNBOUND && !self.unify(p, a, base) {
                        ok = false;
                        break;
                    }
                }
                let r = if ok {
                    let all = if c.body.len() == MAX_LITERALS { u64::MAX } else { (1u64 << c.body.len()) - 1 };
                    self.solve(rules, ci, base, all, t)
                } else {
                    Ok(())
                };
                self.undo(tmark);
                self.binds.truncate(base);
                r?;
            }
            let f = self.stack[depth as usize];
            if self.done(t) {
                // One answer is all a bound call has: complete, whatever it
                // read. What ran for it alone may be partial: evaluated
                // again when asked.
                if f.low >= depth {
                    for m in self.group.drain(mark..).collect::<Vec<_>>() {
                        self.table_mut(m).status = Status::New;
                    }
                }
                self.table_mut(t).status = Status::Complete;
                self.stack.pop();
                if f.low < depth {
                    self.lower(f.low);
                }
                return Ok(());
            }
            if f.low < depth {
                // Part of the group of a call below: it runs this again.
                self.table_mut(t).status = Status::Incomplete { epoch: self.epoch, low: f.low };
                self.group.push(t);
                self.stack.pop();
                self.lower(f.low);
                return Ok(());
            }
            if !f.hit || self.added == before {
                break;
            }
            self.stack[depth as usize].hit = false;
            self.epoch += 1;
        }
        for m in self.group.drain(mark..).collect::<Vec<_>>() {
            self.table_mut(m).status = Status::Complete;
        }
        self.table_mut(t).status = Status::Complete;
        self.stack.pop();
        Ok(())
    }
}

/// Validation makes every rule safe, and a question built from one is
/// too: this is a rule the evaluator was not meant to be given.
fn unsafe_rule(rules: &Rules, rel: RelId) -> QueryError {
    QueryError::Unbound { relation: rules.names[rel.index()].clone() }
}
