//! Per-match files: a `tracing` layer that writes every event raised inside
//! a `match` span (fields `player` and `id`) to `log.txt` in the match's
//! folder, at debug level, while the console keeps the concise info-level
//! log. Players say where their folders are with [`register`].

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The folder of a match's log and statistics: `LOG_DIR/PLAYER/MATCH`,
/// each name escaped so that it stays inside its folder and two names
/// never share one (`p/q` and `p_q` differ).
pub fn match_dir(log_dir: &Path, player: &str, id: &str) -> PathBuf {
    log_dir.join(safe_name(player)).join(safe_name(id))
}

/// `s` with every byte other than ASCII letters, digits, `-` and a `.`
/// not in front written `_XX` (hex): one-to-one, since `_` is escaped too.
fn safe_name(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, b) in s.bytes().enumerate() {
        if b.is_ascii_alphanumeric() || b == b'-' || (b == b'.' && i > 0) {
            out.push(b as char);
        } else {
            let _ = write!(out, "_{b:02X}");
        }
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// Log folders by player name.
static DIRS: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();

/// Matches of `player` log under `log_dir`.
pub fn register(player: &str, log_dir: &Path) {
    if let Ok(mut d) = DIRS.get_or_init(Default::default).lock() {
        d.insert(player.to_string(), log_dir.to_path_buf());
    }
}

fn registered(player: &str) -> Option<PathBuf> {
    DIRS.get()?.lock().ok()?.get(player).cloned()
}

struct MatchFile(Arc<Mutex<File>>);

/// Open files, shared by every span of the same match.
#[derive(Default)]
struct Files {
    open: Mutex<HashMap<PathBuf, std::sync::Weak<Mutex<File>>>>,
}

impl Files {
    fn get(&self, dir: &Path) -> Option<Arc<Mutex<File>>> {
        let mut open = self.open.lock().ok()?;
        if let Some(f) = open.get(dir).and_then(|w| w.upgrade()) {
            return Some(f);
        }
        open.retain(|_, w| w.strong_count() > 0);
        std::fs::create_dir_all(dir).ok()?;
        let f = File::options().create(true).append(true).open(dir.join("log.txt")).ok()?;
        let f = Arc::new(Mutex::new(f));
        open.insert(dir.to_path_buf(), Arc::downgrade(&f));
        Some(f)
    }
}

static FILES: OnceLock<Files> = OnceLock::new();

/// The layer; install it once (see `main`).
pub struct MatchFiles;

/// The `player` and `id` fields of a span.
#[derive(Default)]
struct MatchFields {
    player: Option<String>,
    id: Option<String>,
}

impl Visit for MatchFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "player" => self.player = Some(value.to_string()),
            "id" => self.id = Some(value.to_string()),
            _ => {}
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.record_str(field, &format!("{value:?}"));
    }
}

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value}");
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}

/// An event formatter that writes only what `targets` enables (the
/// console's filter), so that one global filter can serve both the console
/// and the match files.
pub struct Gate<F> {
    pub inner: F,
    pub targets: tracing_subscriber::filter::Targets,
}

impl<S, N, F> tracing_subscriber::fmt::FormatEvent<S, N> for Gate<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
    F: tracing_subscriber::fmt::FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let meta = event.metadata();
        if self.targets.would_enable(meta.target(), meta.level()) {
            self.inner.format_event(ctx, writer, event)
        } else {
            Ok(())
        }
    }
}

/// Our crates' events at debug level and above (not dependencies': Cranelift
/// is chatty).
fn wanted(meta: &tracing::Metadata<'_>) -> bool {
    *meta.level() <= tracing::Level::DEBUG
        && ["propel", "propel_compiler", "propel_runtime"]
            .iter()
            .any(|c| meta.target() == *c || meta.target().strip_prefix(c).is_some_and(|r| r.starts_with("::")))
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for MatchFiles {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != "match" {
            return;
        }
        let mut v = MatchFields::default();
        attrs.record(&mut v);
        let (Some(player), Some(mid), Some(span)) = (v.player, v.id, ctx.span(id)) else { return };
        let Some(log_dir) = registered(&player) else { return };
        if let Some(f) = FILES.get_or_init(Files::default).get(&match_dir(&log_dir, &player, &mid)) {
            span.extensions_mut().insert(MatchFile(f));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        if !wanted(event.metadata()) {
            return;
        }
        let Some(scope) = ctx.event_scope(event) else { return };
        for span in scope {
            let ext = span.extensions();
            let Some(MatchFile(f)) = ext.get::<MatchFile>() else { continue };
            let ms = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
            let meta = event.metadata();
            let mut line = Line(format!("{ms} {:5} {}:", meta.level(), meta.target()));
            event.record(&mut line);
            line.0.push('\n');
            if let Ok(mut f) = f.lock() {
                // A log line lost to a full disk is not worth stopping a match for.
                let _ = f.write_all(line.0.as_bytes());
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_one_to_one() {
        let d = Path::new("logs");
        assert_ne!(match_dir(d, "p", "p/q"), match_dir(d, "p", "p_q"));
        assert_eq!(match_dir(d, "propel", "m.1-a"), Path::new("logs/propel/m.1-a"));
        assert_eq!(safe_name("../x"), "_2E._2Fx");
        assert_eq!(safe_name("p_q"), "p_5Fq");
        assert_eq!(safe_name(""), "_");
        assert_ne!(safe_name(""), safe_name("_"));
    }
}
