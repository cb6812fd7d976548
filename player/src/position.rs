//! `--from MOVES` and `--state FACTS`: commands that start from the
//! initial state can start from a position instead.
//!
//! The position is reached on the reference prover (so an illegal move is
//! reported with its ply whatever machine runs), and then becomes the
//! game's initial state: the rules' `init` forms are replaced by the
//! position's facts. Every machine built from those rules (prover,
//! propnet, JIT, hybrid) and the analysis then start there, with nothing
//! machine-specific. A library from `propel compile` was built for the
//! file's own initial state, so `--machine aot:FILE` refuses a position.

use crate::ggp::protocol::forms;
use anyhow::{anyhow, bail, Context as _, Result};
use propel_compiler::reader::{read, Node, NodeId, Sexprs};
use propel_compiler::{Game, Source, SymbolTable};
use propel_runtime::{Prover, StateMachine};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// Where a command starts.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct PositionArgs {
    /// Start after these moves. Plies are separated by `;`; each ply lists
    /// one move per role in role order, e.g. "(mark 1 1) noop; noop (mark
    /// 2 2)". A role with a single legal move (a `noop`) may be left out:
    /// "(mark 1 1); (mark 2 2)". Applied after --state when both are given.
    #[arg(long, value_name = "MOVES")]
    pub from: Option<String>,
    /// Start from this state: its facts in KIF, e.g. "(cell 1 1 x)
    /// (cell 1 2 b) (control oplayer)" (`(true FACT)` is accepted too, so
    /// a trace's `state` can be pasted), or @FILE to read them from a file.
    #[arg(long, value_name = "FACTS")]
    pub state: Option<String>,
}

/// Largest --state file read (facts of a real state are far smaller).
const MAX_STATE_FILE: u64 = 16 << 20;

impl PositionArgs {
    pub fn is_set(&self) -> bool {
        self.from.is_some() || self.state.is_some()
    }

    /// `game` (read from `path`) with its initial state replaced by the
    /// position, or `game` itself when none is given.
    pub fn apply(&self, game: Arc<Game>, path: &Path) -> Result<Arc<Game>> {
        if !self.is_set() {
            return Ok(game);
        }
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let fluents = fluents(&game.name, &text)?;
        let mut game = game;
        if let Some(state) = &self.state {
            let facts = parse_state(state, &fluents)?;
            game = with_initial_state(&game.name, &text, &facts)?;
        }
        if let Some(moves) = &self.from {
            let facts = replay(&game, moves)?;
            game = with_initial_state(&game.name, &text, &facts)?;
        }
        Ok(game)
    }
}

/// Functor and arity of a fact (`cell/3`, `control/1`, `started/0`).
type Fluent = (String, usize);

fn fluent_of(sx: &Sexprs, syms: &SymbolTable, n: NodeId) -> Option<Fluent> {
    match sx.node(n) {
        Node::Sym(s, _) => Some((syms.name(*s).to_string(), 0)),
        Node::List { .. } => {
            let kids = sx.children(n);
            match kids.first().map(|k| sx.node(*k)) {
                Some(Node::Sym(s, _)) => Some((syms.name(*s).to_string(), kids.len() - 1)),
                _ => None,
            }
        }
        Node::Var(..) => None,
    }
}

/// Every functor/arity that appears as the argument of `true`, `init` or
/// `next` anywhere in the rules: the facts a state of this game can hold.
fn fluents(name: &str, text: &str) -> Result<BTreeSet<Fluent>> {
    let src = Source::new(name, text.as_bytes().to_vec());
    let mut syms = SymbolTable::new();
    let sx = read(&src, &mut syms).map_err(|e| anyhow!("{e}"))?;
    let mut out = BTreeSet::new();
    // An explicit stack: rules nest as deep as the reader allows.
    let mut stack: Vec<NodeId> = sx.top.clone();
    while let Some(n) = stack.pop() {
        let kids = sx.children(n);
        if let [head, arg] = kids {
            if let Node::Sym(s, _) = sx.node(*head) {
                if matches!(syms.name(*s), "true" | "init" | "next") {
                    if let Some(f) = fluent_of(&sx, &syms, *arg) {
                        out.insert(f);
                    }
                }
            }
        }
        stack.extend_from_slice(kids);
    }
    Ok(out)
}

/// The facts of `--state` in canonical KIF, checked against the game's
/// fluents.
fn parse_state(arg: &str, fluents: &BTreeSet<Fluent>) -> Result<Vec<String>> {
    let text = match arg.strip_prefix('@') {
        Some(file) => {
            let size = std::fs::metadata(file).with_context(|| format!("--state: reading {file}"))?.len();
            if size > MAX_STATE_FILE {
                bail!("--state: {file} has {size} bytes; a state file may have at most {MAX_STATE_FILE}");
            }
            std::fs::read_to_string(file).with_context(|| format!("--state: reading {file}"))?
        }
        None => arg.to_string(),
    };
    let src = Source::new("--state", text.as_bytes().to_vec());
    let mut syms = SymbolTable::new();
    let sx = read(&src, &mut syms).map_err(|e| anyhow!("{e}"))?;
    let printed = forms("--state", &text).map_err(|e| anyhow!("--state: {e}"))?;
    let mut facts = BTreeSet::new();
    for (&n, kif) in sx.top.iter().zip(&printed) {
        // `(true F)` as a trace or a ggp.org record prints states.
        let (n, kif) = match sx.children(n) {
            [head, arg] if matches!(sx.node(*head), Node::Sym(s, _) if syms.name(*s) == "true") => {
                (*arg, kif.strip_prefix("(true ").and_then(|k| k.strip_suffix(')')).unwrap_or(kif))
            }
            _ => (n, kif.as_str()),
        };
        if kif.contains('?') {
            bail!("--state: `{kif}` has a variable; a state's facts are ground terms");
        }
        let f = fluent_of(&sx, &syms, n).ok_or_else(|| anyhow!("--state: `{kif}` is not a fact"))?;
        if !fluents.contains(&f) {
            let known: Vec<String> = fluents.iter().map(|(n, a)| format!("{n}/{a}")).collect();
            bail!(
                "--state: `{kif}` ({}/{}) is not a fact this game's states hold (it has: {})",
                f.0,
                f.1,
                known.join(", ")
            );
        }
        facts.insert(kif.to_string());
    }
    if facts.is_empty() {
        bail!("--state: no facts given");
    }
    Ok(facts.into_iter().collect())
}

/// The rules with every `init` form blanked out (so that line and column
/// numbers of the rest stay as in the file) and `facts` as the initial
/// state.
fn with_initial_state(name: &str, text: &str, facts: &[String]) -> Result<Arc<Game>> {
    let src = Source::new(name, text.as_bytes().to_vec());
    let mut syms = SymbolTable::new();
    let sx = read(&src, &mut syms).map_err(|e| anyhow!("{e}"))?;
    let is_init = |n: NodeId| -> bool {
        let head = |n: NodeId| match sx.children(n).first().map(|k| sx.node(*k)) {
            Some(Node::Sym(s, _)) => Some(syms.name(*s)),
            _ => None,
        };
        match head(n) {
            Some("init") => true,
            Some("<=") => sx.children(n).get(1).is_some_and(|h| {
                head(*h) == Some("init") || matches!(sx.node(*h), Node::Sym(s, _) if syms.name(*s) == "init")
            }),
            _ => false,
        }
    };
    let mut bytes = text.as_bytes().to_vec();
    for &n in sx.top.iter().filter(|&&n| is_init(n)) {
        let span = sx.span(n);
        for b in &mut bytes[span.start as usize..span.end as usize] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    }
    bytes.extend_from_slice(b"\n; the position given on the command line\n");
    for f in facts {
        bytes.extend_from_slice(format!("(init {f})\n").as_bytes());
    }
    let game = propel_compiler::load(name, bytes).map_err(|e| anyhow!("the rules with the given position: {e}"))?;
    Ok(Arc::new(game))
}

/// Plays `--from`'s plies on the prover from `game`'s initial state and
/// returns the facts of the state reached.
fn replay(game: &Arc<Game>, moves: &str) -> Result<Vec<String>> {
    let mut m = Prover::new(game.clone())?;
    let roles = m.roles().to_vec();
    let mut s = m.initial_state()?;
    let mut legal = Vec::new();
    let plies: Vec<&str> = moves.split(';').map(str::trim).filter(|p| !p.is_empty()).collect();
    for (i, ply) in plies.iter().enumerate() {
        let n = i + 1;
        if m.is_terminal(&s)? {
            bail!("--from: ply {n} (`{ply}`): the game is over after ply {}", n - 1);
        }
        let given = forms("--from", ply).map_err(|e| anyhow!("--from: ply {n}: {e}"))?;
        let mut by_role = Vec::with_capacity(roles.len());
        for r in 0..roles.len() {
            m.legal_moves(&s, r, &mut legal)?;
            by_role.push(legal.clone());
        }
        // Roles given a move: every role, or those with a choice.
        let choosing: Vec<usize> = if given.len() == roles.len() {
            (0..roles.len()).collect()
        } else {
            (0..roles.len()).filter(|&r| by_role[r].len() != 1).collect()
        };
        if choosing.len() != given.len() {
            bail!(
                "--from: ply {n} (`{ply}`) has {} move(s); it needs one per role in role order ({}), \
                 or one per role with a choice here ({})",
                given.len(),
                roles.join(" "),
                if choosing.is_empty() {
                    "none".into()
                } else {
                    choosing.iter().map(|&r| roles[r].as_str()).collect::<Vec<_>>().join(" ")
                }
            );
        }
        let mut joint: Vec<_> = by_role.iter().map(|l| l.first().copied()).collect();
        for (&r, mv) in choosing.iter().zip(&given) {
            let found = by_role[r].iter().copied().find(|&l| m.move_kif(l) == *mv);
            match found {
                Some(l) => joint[r] = Some(l),
                None => {
                    let mut names: Vec<String> = by_role[r].iter().map(|&l| m.move_kif(l)).collect();
                    names.sort();
                    let shown = if names.len() > 12 {
                        format!("{}, ... ({} in all)", names[..12].join(", "), names.len())
                    } else {
                        names.join(", ")
                    };
                    bail!("--from: ply {n}: `{mv}` is not a legal move of {} (legal: {shown})", roles[r]);
                }
            }
        }
        let joint: Vec<_> = joint
            .into_iter()
            .enumerate()
            .map(|(r, mv)| mv.ok_or_else(|| anyhow!("--from: ply {n}: {} has no legal move", roles[r])))
            .collect::<Result<_>>()?;
        s = m.next_state(&s, &joint)?;
    }
    Ok(m.state_kif(&s))
}
