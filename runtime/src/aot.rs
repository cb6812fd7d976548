//! Loading a machine library written by `propel compile` (a shared object
//! with the C ABI of [`propel_compiler::lower`]). A library is refused
//! when its format version differs, when it needs processor features this
//! machine lacks, or when it was built from another version of the game.

use crate::native::{EngineOffsets, NativeCode};
use libloading::Library;
use propel_compiler::lower::{Fns, EXPORTS, FORMAT_VERSION};
use serde_json::Value;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum AotError {
    #[error("{path}: cannot load the library: {reason}")]
    Load { path: String, reason: String },
    #[error("{path}: not a Propel machine library: {reason}")]
    Foreign { path: String, reason: String },
    #[error("{path}: built by another version of Propel (library format {found}, this Propel reads {FORMAT_VERSION}); run `propel compile` again")]
    Format { path: String, found: u64 },
    #[error("{path}: built for another processor ({built}); this one is {host}")]
    Cpu { path: String, built: String, host: String },
    #[error("{path}: stale: built from another version of the game (hash {built}, the game file now hashes to {now}); run `propel compile` again")]
    Stale { path: String, built: String, now: String },
}

/// Whether a library built for `built` runs here (`host`): the same
/// target, and every processor feature it was built with present here.
pub fn cpu_compatible(built: &str, host: &str) -> bool {
    let mut b = built.split(' ');
    let mut h = host.split(' ');
    if b.next() != h.next() {
        return false;
    }
    let have: Vec<&str> = h.next().unwrap_or("").split(',').collect();
    b.next().unwrap_or("").split(',').filter(|f| !f.is_empty()).all(|f| have.contains(&f))
}

fn strings(v: &Value, key: &str) -> Option<Vec<String>> {
    v[key].as_array()?.iter().map(|x| x.as_str().map(String::from)).collect()
}

fn numbers(v: &Value, key: &str) -> Option<Vec<u32>> {
    v[key].as_array()?.iter().map(|x| x.as_u64().map(|n| n as u32)).collect()
}

/// Loads `path`; `game_hash`, when given, must match the library's.
pub fn load(path: &Path, game_hash: Option<&str>) -> Result<NativeCode, AotError> {
    let p = path.display().to_string();
    let load_err = |reason: String| AotError::Load { path: p.clone(), reason };
    let foreign = |reason: &str| AotError::Foreign { path: p.clone(), reason: reason.to_string() };
    // SAFETY: loading a shared object runs its initialisers. Libraries from
    // `propel compile` have none of their own (only the C runtime's); the
    // user names the file, as with any plugin.
    let lib = unsafe { Library::new(path) }.map_err(|e| load_err(e.to_string()))?;
    let mut addrs = Vec::with_capacity(EXPORTS.len());
    for name in EXPORTS {
        let sym = format!("{name}\0");
        // SAFETY: only the address is read here; it is typed below, after
        // the metadata has shown the library is one of ours.
        let f = unsafe { lib.get::<*const u8>(sym.as_bytes()) }.map_err(|_| foreign(&format!("it has no `{name}`")))?;
        addrs.push(*f as *const u8);
    }
    // SAFETY: the library exports every function of EXPORTS; `propel_info`
    // has the signature `Fns::info` names (checked against the format
    // version right after, before any other function is called).
    let fns = unsafe { Fns::from_addresses(&addrs) };
    // SAFETY: `propel_info` returns a pointer to a NUL-terminated text in
    // the library's read-only data, alive while `lib` is.
    let text = unsafe { std::ffi::CStr::from_ptr((fns.info)() as *const std::ffi::c_char) };
    let meta: Value = serde_json::from_slice(text.to_bytes()).map_err(|_| foreign("unreadable metadata"))?;
    let format = meta["format"].as_u64().ok_or_else(|| foreign("no format version"))?;
    if format != FORMAT_VERSION as u64 {
        return Err(AotError::Format { path: p, found: format });
    }
    let built = meta["cpu"].as_str().unwrap_or_default().to_string();
    let host = propel_compiler::lower::host_cpu().map_err(|e| load_err(e.to_string()))?;
    if !cpu_compatible(&built, &host) {
        return Err(AotError::Cpu { path: p, built, host });
    }
    let hash = meta["game_hash"].as_str().unwrap_or_default().to_string();
    if let Some(now) = game_hash {
        if now != hash {
            return Err(AotError::Stale { path: p, built: hash, now: now.to_string() });
        }
    }
    let roles = strings(&meta, "roles").ok_or_else(|| foreign("no roles"))?;
    let base_names = strings(&meta, "bases").ok_or_else(|| foreign("no bases"))?;
    let input_names = strings(&meta, "inputs").ok_or_else(|| foreign("no inputs"))?;
    let input_role = numbers(&meta, "input_roles").ok_or_else(|| foreign("no input roles"))?;
    let init = numbers(&meta, "init").ok_or_else(|| foreign("no initial state"))?;
    let size = meta["size"].as_u64().ok_or_else(|| foreign("no size"))? as u32;
    let engines = meta["engines"]
        .as_array()
        .ok_or_else(|| foreign("no engines"))?
        .iter()
        .map(|e| {
            let r = e["region"].as_u64()? as u32;
            Some(EngineOffsets {
                legal_bits: r + e["legal_bits"].as_u64()? as u32,
                next_bits: r + e["next_bits"].as_u64()? as u32,
            })
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| foreign("bad engine layout"))?;
    if input_role.len() != input_names.len() || input_role.iter().any(|&r| r as usize >= roles.len()) {
        return Err(foreign("inconsistent metadata"));
    }
    let mut initial = vec![0u64; base_names.len().div_ceil(64)];
    for i in init {
        if let Some(w) = initial.get_mut(i as usize / 64) {
            *w |= 1 << (i % 64);
        }
    }
    Ok(NativeCode {
        lanes: NativeCode::lane_plan(&fns),
        fns,
        size,
        engines,
        bases: base_names.len(),
        inputs: input_names.len(),
        role_range: NativeCode::ranges(roles.len(), &input_role),
        roles,
        base_names,
        input_names,
        input_role,
        initial,
        owner: Box::new(lib),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_features_must_be_present() {
        assert!(cpu_compatible("x86_64-linux a,b", "x86_64-linux a,b,c"));
        assert!(!cpu_compatible("x86_64-linux a,d", "x86_64-linux a,b,c"));
        assert!(!cpu_compatible("aarch64-linux a", "x86_64-linux a"));
    }
}
