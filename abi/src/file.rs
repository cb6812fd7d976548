//! A library file as `propel compile` leaves it: the shared object the C
//! compiler linked, then a trailer of [`TRAILER_LEN`] bytes (the loader
//! ignores bytes after the last segment) holding the format, the game's
//! hash and a hash of everything before it. [`check`] reads a file before
//! anyone opens it with `dlopen`: a missing, truncated, corrupted, foreign
//! or old file gets an error saying which, where `dlopen` would have
//! crashed the process (a truncated file's pages fault with SIGBUS, a
//! corrupted one's code with SIGILL) or said only "dlopen failed".
//!
//! Trailer (little-endian): `PRPLSEAL`, trailer version (u32), format
//! (u32), length of what precedes (u64), content hash (u64), game hash
//! (16 hex digits), 8 reserved zero bytes, `PRPLEND\0`.

use crate::FORMAT_VERSION;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Bytes of the trailer.
pub const TRAILER_LEN: usize = 64;
const MAGIC: &[u8; 8] = b"PRPLSEAL";
const END: &[u8; 8] = b"PRPLEND\0";
const TRAILER_VERSION: u32 = 1;
/// What the metadata text starts with (to recognise libraries of other
/// formats, which have no trailer).
const META_MARK: &[u8] = b"{\"format\":";

/// Why a library file was refused.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("no such file")]
    Missing,
    #[error("cannot read the file: {0}")]
    Io(std::io::Error),
    #[error("not a shared object: {0}")]
    Foreign(String),
    #[error("not a Propel machine library (no Propel metadata in it)")]
    NotPropel,
    #[error("truncated: the file has {found} bytes, its contents need {needed}")]
    Truncated { needed: u64, found: u64 },
    #[error("damaged: its contents no longer match the checksum written when it was compiled")]
    Damaged,
    #[error("damaged: its checksum trailer is missing (the file was cut short, stripped or altered)")]
    Unsealed,
    #[error("built by another version of Propel (library format {found}, this Propel reads {FORMAT_VERSION})")]
    Format { found: u64 },
}

impl From<std::io::Error> for FileError {
    fn from(e: std::io::Error) -> Self {
        FileError::Io(e)
    }
}

/// What a checked file's trailer says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sealed {
    pub game_hash: String,
    /// Bytes of the shared object (the file less its trailer).
    pub length: u64,
}

/// A hash of a stream of bytes, eight at a time: every step is a
/// bijection of the state, so any one changed word changes the result.
struct Hasher {
    h: u64,
    len: u64,
}

impl Hasher {
    fn new() -> Hasher {
        Hasher { h: 0x243f_6a88_85a3_08d3, len: 0 }
    }

    fn word(&mut self, w: u64) {
        self.h = (self.h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.h ^= self.h >> 32;
    }

    /// `bytes`, whose length is a multiple of 8 except for the last call.
    fn bytes(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.word(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(w));
        }
        self.len += bytes.len() as u64;
    }

    fn finish(mut self) -> u64 {
        let len = self.len;
        self.word(len);
        self.h
    }
}

/// The hash of the first `len` bytes of `f` (from its start).
fn content_hash(f: &mut (impl Read + Seek), len: u64) -> Result<u64, FileError> {
    f.seek(SeekFrom::Start(0))?;
    let mut h = Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let want = (buf.len() as u64).min(left) as usize;
        f.read_exact(&mut buf[..want])?;
        h.bytes(&buf[..want]);
        left -= want as u64;
    }
    Ok(h.finish())
}

/// Appends the trailer to the linked library at `path` (the file is
/// rewritten in place; callers write to a temporary name).
pub fn seal(path: &Path, game_hash: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().read(true).append(true).open(path)?;
    let length = f.metadata()?.len();
    let hash = content_hash(&mut f, length).map_err(|e| match e {
        FileError::Io(e) => e,
        other => std::io::Error::other(other.to_string()),
    })?;
    let mut t = Vec::with_capacity(TRAILER_LEN);
    t.extend_from_slice(MAGIC);
    t.extend_from_slice(&TRAILER_VERSION.to_le_bytes());
    t.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    t.extend_from_slice(&length.to_le_bytes());
    t.extend_from_slice(&hash.to_le_bytes());
    let mut g = [b'0'; 16];
    let gh = game_hash.as_bytes();
    g[..gh.len().min(16)].copy_from_slice(&gh[..gh.len().min(16)]);
    t.extend_from_slice(&g);
    t.extend_from_slice(&[0u8; 8]);
    t.extend_from_slice(END);
    debug_assert_eq!(t.len(), TRAILER_LEN);
    f.write_all(&t)?;
    f.sync_all()
}

struct Trailer {
    format: u32,
    length: u64,
    hash: u64,
    game_hash: String,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn read_trailer(f: &mut (impl Read + Seek), len: u64) -> Result<Option<Trailer>, FileError> {
    if len < TRAILER_LEN as u64 {
        return Ok(None);
    }
    let mut t = [0u8; TRAILER_LEN];
    f.seek(SeekFrom::Start(len - TRAILER_LEN as u64))?;
    f.read_exact(&mut t)?;
    let reserved_zero = t[48..56].iter().all(|&b| b == 0);
    if &t[..8] != MAGIC || &t[56..64] != END || u32_at(&t, 8) != TRAILER_VERSION || !reserved_zero {
        return Ok(None);
    }
    Ok(Some(Trailer {
        format: u32_at(&t, 12),
        length: u64_at(&t, 16),
        hash: u64_at(&t, 24),
        game_hash: String::from_utf8_lossy(&t[32..48]).into_owned(),
    }))
}

/// The ELF machine number of this processor's architecture.
const ELF_MACHINE: u16 = if cfg!(target_arch = "x86_64") {
    62
} else if cfg!(target_arch = "aarch64") {
    183
} else {
    0
};

/// Checks the ELF header and that every table and loaded segment lies
/// within the first `len` bytes.
fn check_elf(f: &mut (impl Read + Seek), len: u64) -> Result<(), FileError> {
    let mut h = [0u8; 64];
    f.seek(SeekFrom::Start(0))?;
    if len < 64 || f.read_exact(&mut h).is_err() || &h[..4] != b"\x7fELF" {
        return Err(FileError::Foreign("it does not start as an ELF file does".into()));
    }
    if h[4] != 2 || h[5] != 1 {
        return Err(FileError::Foreign("not a 64-bit little-endian ELF file".into()));
    }
    if u16_at(&h, 16) != 3 {
        return Err(FileError::Foreign("an ELF file, but not a shared object".into()));
    }
    let machine = u16_at(&h, 18);
    if machine != ELF_MACHINE {
        return Err(FileError::Foreign(format!("built for another architecture (ELF machine {machine})")));
    }
    let (phoff, shoff) = (u64_at(&h, 32), u64_at(&h, 40));
    let (phentsize, phnum) = (u16_at(&h, 54) as u64, u16_at(&h, 56) as u64);
    let (shentsize, shnum) = (u16_at(&h, 58) as u64, u16_at(&h, 60) as u64);
    let truncated = |needed: u64| Err(FileError::Truncated { needed, found: len });
    let ph_end = phoff.saturating_add(phentsize * phnum);
    if phentsize < 56 || phnum == 0 {
        return Err(FileError::Foreign("an ELF file without program headers".into()));
    }
    if ph_end > len {
        return truncated(ph_end);
    }
    let sh_end = shoff.saturating_add(shentsize * shnum);
    if shnum > 0 && sh_end > len {
        return truncated(sh_end);
    }
    let mut ph = vec![0u8; (phentsize * phnum) as usize];
    f.seek(SeekFrom::Start(phoff))?;
    f.read_exact(&mut ph)?;
    let mut needed = 0u64;
    for p in ph.chunks_exact(phentsize as usize) {
        const PT_LOAD: u32 = 1;
        if u32_at(p, 0) == PT_LOAD {
            needed = needed.max(u64_at(p, 8).saturating_add(u64_at(p, 32)));
        }
    }
    if needed > len {
        return truncated(needed);
    }
    Ok(())
}

/// The format of the first Propel metadata text in the file, if any (a
/// library of an older format has no trailer, but its metadata says
/// which format it is).
fn find_format(f: &mut (impl Read + Seek), len: u64) -> Result<Option<u64>, FileError> {
    f.seek(SeekFrom::Start(0))?;
    let mut buf = vec![0u8; 1 << 20];
    // Bytes kept from the previous block, so that a mark across the
    // boundary is found.
    let keep = META_MARK.len() + 20;
    let mut have = 0usize;
    let mut read = 0u64;
    while read < len {
        let n = f.read(&mut buf[have..])?;
        if n == 0 {
            break;
        }
        read += n as u64;
        let end = have + n;
        if let Some(at) = buf[..end].windows(META_MARK.len()).position(|w| w == META_MARK) {
            let digits: Vec<u8> =
                buf[at + META_MARK.len()..end].iter().copied().take_while(u8::is_ascii_digit).take(9).collect();
            if let Ok(found) = String::from_utf8_lossy(&digits).parse() {
                return Ok(Some(found));
            }
        }
        let tail = end.saturating_sub(keep);
        buf.copy_within(tail..end, 0);
        have = end - tail;
    }
    Ok(None)
}

/// Checks a library file before it is opened: an ELF shared object for
/// this architecture, whole, of this format, its contents as compiled.
pub fn check(path: &Path) -> Result<Sealed, FileError> {
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(FileError::Missing),
        Err(e) => return Err(FileError::Io(e)),
    };
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(FileError::Foreign("not a regular file".into()));
    }
    check_contents(&mut f, meta.len())
}

/// [`check`] on the `len` bytes of any seekable reader (a file, or bytes
/// in memory, as the fuzz target hands them).
pub fn check_contents(f: &mut (impl Read + Seek), len: u64) -> Result<Sealed, FileError> {
    let trailer = read_trailer(f, len)?;
    let length = trailer.as_ref().map_or(len, |t| t.length);
    if length > len {
        return Err(FileError::Truncated { needed: length, found: len });
    }
    check_elf(f, length)?;
    let Some(t) = trailer else {
        return Err(match find_format(f, len)? {
            Some(found) if found != FORMAT_VERSION as u64 => FileError::Format { found },
            Some(_) => FileError::Unsealed,
            None => FileError::NotPropel,
        });
    };
    if t.format != FORMAT_VERSION {
        return Err(FileError::Format { found: t.format as u64 });
    }
    if t.length + TRAILER_LEN as u64 != len || content_hash(f, t.length)? != t.hash {
        return Err(FileError::Damaged);
    }
    Ok(Sealed { game_hash: t.game_hash, length: t.length })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_changed_word_changes_the_hash() {
        let data: Vec<u8> = (0..1000u32).flat_map(|i| i.to_le_bytes()).collect();
        let hash = |d: &[u8]| {
            let mut h = Hasher::new();
            h.bytes(d);
            h.finish()
        };
        let h0 = hash(&data);
        for at in [0, 7, 8, 500, 3999] {
            let mut d = data.clone();
            d[at] ^= 0x10;
            assert_ne!(hash(&d), h0, "byte {at}");
        }
        assert_ne!(hash(&data[..3999]), h0);
        let mut zeros = data.clone();
        zeros.push(0);
        assert_ne!(hash(&zeros), h0, "a trailing zero byte counts");
    }

    #[test]
    fn files_that_are_not_libraries_are_told_apart() {
        let dir = std::env::temp_dir().join(format!("propel-abi-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(matches!(check(&dir.join("none.so")), Err(FileError::Missing)));
        let text = dir.join("text.so");
        std::fs::write(&text, b"not a shared object at all, just some text").unwrap();
        assert!(matches!(check(&text), Err(FileError::Foreign(_))));
        assert!(matches!(check(&dir), Err(FileError::Foreign(_))));
        std::fs::remove_dir_all(&dir).ok();
    }
}
