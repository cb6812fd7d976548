//! Loading a machine library written by `propel compile` (a shared object
//! with the C ABI of [`propel_abi::exports`]). Before the file is opened it
//! is checked ([`propel_abi::file::check`]: present, a whole ELF shared
//! object for this architecture, of this format, its contents as compiled,
//! built from this game); after, its metadata ([`propel_abi::meta`]) and
//! processor ([`propel_abi::cpu`]). Each refusal says which check failed.

use crate::native::{NativeCode, Owner};
use propel_abi::file::FileError;
use propel_abi::meta::MetaError;
use propel_abi::{Export, Fns, FORMAT_VERSION};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum AotError {
    #[error("{path}: {reason}")]
    File { path: String, reason: FileError },
    #[error("{path}: cannot load the library: {reason}")]
    Load { path: String, reason: String },
    #[error("{path}: not a Propel machine library: it has no `{name}`")]
    Missing { path: String, name: &'static str },
    #[error("{path}: built by another version of Propel (library format {found}, this Propel reads {FORMAT_VERSION}); run `propel compile` again")]
    Format { path: String, found: u64 },
    #[error("{path}: {reason}")]
    Meta { path: String, reason: MetaError },
    #[error("{path}: built for another processor ({built}); this one is {host}")]
    Target { path: String, built: String, host: &'static str },
    #[error("{path}: built for a processor with {missing}, which this one lacks")]
    Cpu { path: String, missing: String },
    #[error("{path}: stale: built from another version of the game (hash {built}, the game file now hashes to {now}); run `propel compile` again")]
    Stale { path: String, built: String, now: String },
}

/// A loaded library and its functions.
struct Library {
    fns: Fns,
    _lib: libloading::Library,
}

impl Owner for Library {
    fn fns(&self) -> &Fns {
        &self.fns
    }
}

/// `path` as `dlopen` should see it: a name without a slash is a file in
/// the current folder (not a search of the system's library path).
pub fn resolve(path: &Path) -> PathBuf {
    let bare = path.parent().is_none_or(|p| p.as_os_str().is_empty());
    if bare {
        Path::new(".").join(path)
    } else {
        path.to_path_buf()
    }
}

/// An error and its sources, as one line (`dlopen failed: <dlerror>`).
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// Loads `path`; `game_hash`, when given, must be the library's game.
pub fn load(path: &Path, game_hash: Option<&str>) -> Result<NativeCode, AotError> {
    let p = path.display().to_string();
    let sealed = match propel_abi::file::check(path) {
        Ok(s) => s,
        Err(FileError::Format { found }) => return Err(AotError::Format { path: p, found }),
        Err(reason) => return Err(AotError::File { path: p, reason }),
    };
    if let Some(now) = game_hash.filter(|&h| h != sealed.game_hash) {
        return Err(AotError::Stale { path: p, built: sealed.game_hash, now: now.to_string() });
    }
    // SAFETY: loading a shared object runs its initialisers. Libraries from
    // `propel compile` have none of their own (only the C runtime's), and
    // the file was just checked to be one, whole and unaltered; the user
    // names the file, as with any plugin.
    let lib = unsafe { libloading::Library::new(resolve(path)) }
        .map_err(|e| AotError::Load { path: p.clone(), reason: chain(&e) })?;
    let address = |e: Export| {
        let sym = format!("{}\0", e.name());
        // SAFETY: only the address is read here; it is typed by
        // `Fns::resolve` below, for a library the checks above showed to be
        // one of ours of this format.
        let found = unsafe { lib.get::<*mut std::ffi::c_void>(sym.as_bytes()) }.ok().map(|s| *s);
        found.and_then(std::ptr::NonNull::new)
    };
    // SAFETY: the library is a sealed Propel library of this format (its
    // trailer says so and its contents hash to what was written at compile
    // time), so each export is the generated function of the table, with
    // the table's signature; `Library` keeps the library loaded as long as
    // `fns`.
    let fns = unsafe { Fns::resolve(address) }.map_err(|e| AotError::Missing { path: p.clone(), name: e.name() })?;
    let code = NativeCode::new(Box::new(Library { fns, _lib: lib })).map_err(|reason| match reason {
        MetaError::Format { found } => AotError::Format { path: p.clone(), found },
        reason => AotError::Meta { path: p.clone(), reason },
    })?;
    match propel_abi::cpu::missing(code.cpu()) {
        Err(built) => return Err(AotError::Target { path: p, built, host: propel_abi::cpu::TARGET }),
        Ok(m) if !m.is_empty() => return Err(AotError::Cpu { path: p, missing: m.join(", ") }),
        Ok(_) => {}
    }
    if code.game_hash() != sealed.game_hash {
        let reason = MetaError::Invalid("its game hash differs from its file's trailer".into());
        return Err(AotError::Meta { path: p, reason });
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_names_are_in_the_current_folder() {
        assert_eq!(resolve(Path::new("ttt.so")), Path::new("./ttt.so"));
        assert_eq!(resolve(Path::new("/tmp/ttt.so")), Path::new("/tmp/ttt.so"));
        assert_eq!(resolve(Path::new("lib/ttt.so")), Path::new("lib/ttt.so"));
    }

    #[test]
    fn a_missing_file_says_so() {
        let e = load(Path::new("/nonexistent/propel-test.so"), None).err().map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("/nonexistent/propel-test.so: no such file"));
    }
}
