//! How native code is generated: every setting a value the command line
//! passes down (`--codegen`, `--codegen-threads`), none read from the
//! environment. The defaults are what measurements chose (docs/native.md,
//! RESULTS.md).

/// Cranelift's optimisation level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptLevel {
    None,
    Speed,
    SpeedAndSize,
}

impl OptLevel {
    pub(crate) fn name(self) -> &'static str {
        match self {
            OptLevel::None => "none",
            OptLevel::Speed => "speed",
            OptLevel::SpeedAndSize => "speed_and_size",
        }
    }
}

/// Cranelift's register allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regalloc {
    Backtracking,
    SinglePass,
}

impl Regalloc {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Regalloc::Backtracking => "backtracking",
            Regalloc::SinglePass => "single_pass",
        }
    }
}

/// A flag another thread raises to stop code generation (a match's abort,
/// or its start clock running out); options compare equal whatever it is.
#[derive(Clone, Debug, Default)]
pub struct Cancel(pub Option<std::sync::Arc<std::sync::atomic::AtomicBool>>);

impl Cancel {
    pub fn raised(&self) -> bool {
        // Relaxed: the flag publishes no data; a late read only delays the
        // stop by one function.
        self.0.as_ref().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
    }
}

impl PartialEq for Cancel {
    fn eq(&self, _: &Cancel) -> bool {
        true
    }
}

impl Eq for Cancel {}

/// Code generation settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodegenOptions {
    /// Worker threads (0: every core).
    pub threads: usize,
    /// IR instructions held before a batch is compiled; the engines'
    /// bodies and the goal network's chunks are sized from it.
    pub batch_insts: usize,
    /// Roles whose move ORs read at least this many input edges get a
    /// move table (`lower::moves`).
    pub move_table_edges: usize,
    /// Fan-outs larger than this go into functions of this many updates.
    pub fanout_piece: usize,
    /// Overrides of both code kinds' optimisation level and allocator.
    pub opt_level: Option<OptLevel>,
    pub regalloc: Option<Regalloc>,
    /// Engine chunks copy the values every update reads (instance, flip
    /// direction, stack top) into block-local values at each component's
    /// block: the single-pass allocator reloads a value that lives across
    /// blocks from its spill slot at every use.
    pub engine_locals: bool,
    /// Engines whose propagation code makes at most this many counter
    /// updates are compiled like the control code (optimised, backtracking
    /// allocator): it keeps the flip and the stack top in registers across
    /// a chunk's blocks, but compiles several times slower.
    pub engine_opt_updates: usize,
    /// Engines with more counter updates than this propagate from tables
    /// (`lower::tables`) instead of straight-line code per component.
    pub engine_table_updates: usize,
    /// Legal and next bits written without a branch (a branch per
    /// triggering update splits the component's block, and values are
    /// reloaded after each split).
    pub branch_free_triggers: bool,
    /// Cranelift's verifier on every function (always in debug builds).
    pub verify: bool,
    /// Print every function's machine code (stderr).
    pub dump_asm: bool,
    /// Print Cranelift's time per pass for each worker (stderr).
    pub pass_times: bool,
    /// Checked between functions: once raised, code generation fails
    /// with [`super::LowerError::Cancelled`].
    pub cancel: Cancel,
}

impl Default for CodegenOptions {
    fn default() -> Self {
        CodegenOptions {
            threads: 0,
            batch_insts: super::parallel::BATCH_INSTS,
            move_table_edges: super::moves::MIN_EDGES,
            fanout_piece: super::engine::FANOUT_PIECE,
            opt_level: None,
            regalloc: None,
            engine_locals: true,
            engine_opt_updates: super::engine::ENGINE_OPT_UPDATES,
            engine_table_updates: super::engine::ENGINE_TABLE_UPDATES,
            branch_free_triggers: true,
            verify: cfg!(debug_assertions),
            dump_asm: false,
            pass_times: false,
            cancel: Cancel::default(),
        }
    }
}

/// The keys [`CodegenOptions::set`] takes.
pub const KEYS: &str = "threads, batch-insts, move-table, fanout-piece, opt-level (none|speed|speed_and_size), \
                        regalloc (backtracking|single_pass), engine-locals, engine-opt-updates (0: never), engine-table-updates (0: always), branch-free-triggers, verify, dump-asm, \
                        pass-times (booleans: on|off)";

impl CodegenOptions {
    /// Sets `key` to `value` (see [`KEYS`]).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let count = |v: &str| -> Result<usize, String> {
            v.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("`{key}` wants a positive integer, not `{v}`"))
        };
        let amount =
            |v: &str| -> Result<usize, String> { v.parse().map_err(|_| format!("`{key}` wants a count, not `{v}`")) };
        let flag = |v: &str| match v {
            "on" | "true" | "1" | "yes" => Ok(true),
            "off" | "false" | "0" | "no" => Ok(false),
            _ => Err(format!("`{key}` wants on or off, not `{v}`")),
        };
        match key {
            "threads" => self.threads = count(value)?,
            "batch-insts" => self.batch_insts = count(value)?,
            "move-table" => self.move_table_edges = count(value)?,
            "fanout-piece" => self.fanout_piece = count(value)?,
            "opt-level" => {
                self.opt_level = Some(match value {
                    "none" => OptLevel::None,
                    "speed" => OptLevel::Speed,
                    "speed_and_size" => OptLevel::SpeedAndSize,
                    _ => return Err(format!("unknown opt-level `{value}` (none, speed, speed_and_size)")),
                })
            }
            "regalloc" => {
                self.regalloc = Some(match value {
                    "backtracking" => Regalloc::Backtracking,
                    "single_pass" => Regalloc::SinglePass,
                    _ => return Err(format!("unknown regalloc `{value}` (backtracking, single_pass)")),
                })
            }
            "engine-locals" => self.engine_locals = flag(value)?,
            "engine-opt-updates" => self.engine_opt_updates = amount(value)?,
            "engine-table-updates" => self.engine_table_updates = amount(value)?,
            "branch-free-triggers" => self.branch_free_triggers = flag(value)?,
            "verify" => self.verify = flag(value)? || cfg!(debug_assertions),
            "dump-asm" => self.dump_asm = flag(value)?,
            "pass-times" => self.pass_times = flag(value)?,
            _ => return Err(format!("unknown code generation setting `{key}` (settings: {KEYS})")),
        }
        Ok(())
    }

    /// Applies comma-separated `key=value` settings.
    pub fn apply(&mut self, list: &str) -> Result<(), String> {
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item.split_once('=').ok_or_else(|| format!("`{item}` is not key=value"))?;
            self.set(k.trim(), v.trim())?;
        }
        Ok(())
    }

    /// The worker threads to use (every core for 0).
    pub fn workers(&self) -> usize {
        match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_refuse_what_they_do_not_know() {
        let mut o = CodegenOptions::default();
        o.apply("threads=2, move-table=1,opt-level=speed,dump-asm=on").unwrap();
        assert_eq!((o.threads, o.move_table_edges, o.opt_level, o.dump_asm), (2, 1, Some(OptLevel::Speed), true));
        assert!(o.apply("threads=0").is_err());
        assert!(o.apply("colour=blue").is_err());
        assert!(o.apply("verify").is_err());
        assert!(o.apply("regalloc=fast").is_err());
    }
}
