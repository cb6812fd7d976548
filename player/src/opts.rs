//! Numeric command-line options, validated in one place so that no value
//! typed on the command line can panic or abort a command: durations and
//! other real numbers must be finite and non-negative and are clamped to a
//! documented maximum; counts must lie in a documented range.
//!
//! Arguments using these parsers also take `allow_hyphen_values`, so that
//! `--seconds -1` reaches the parser and gets its message instead of
//! clap's "unexpected argument '-1'".

use clap::builder::TypedValueParser;
use clap::error::ErrorKind;
use std::ffi::OsStr;

/// The longest duration any option takes, in seconds (about 11.6 days):
/// larger values are clamped to it (a `Duration` overflows near 1.8e19 s,
/// and no run of a command is meant to last longer).
pub const MAX_SECONDS: f64 = 1e6;

/// Most threads any option starts.
pub const MAX_THREADS: u64 = 256;

/// Largest search-graph pool (node indices are 32-bit).
pub const MAX_POOL: u64 = 100_000_000;

/// Deepest perft (one line per depth; deeper counts never finish).
pub const MAX_DEPTH: u64 = 1000;

/// The name an error message gives the option (`--seconds`).
fn option_name(arg: Option<&clap::Arg>) -> String {
    match arg.and_then(|a| a.get_long()) {
        Some(l) => format!("--{l}"),
        None => arg.map(|a| a.get_id().to_string()).unwrap_or_else(|| "the value".into()),
    }
}

fn invalid(cmd: &clap::Command, msg: String) -> clap::Error {
    clap::Error::raw(ErrorKind::ValueValidation, format!("{msg}\n")).with_cmd(cmd)
}

/// A finite, non-negative real number in `unit`s, clamped to `max` (with
/// a note on stderr when it was), or with `min` set, an error outside
/// `min..=max`.
#[derive(Clone, Copy, Debug)]
pub struct Real {
    pub max: f64,
    pub unit: &'static str,
    /// When set, values below it or over `max` are errors that state the
    /// range (a bound the command relies on, not a sanity cap).
    pub min: Option<f64>,
}

/// Seconds: finite, non-negative, at most [`MAX_SECONDS`].
pub fn seconds() -> Real {
    Real { max: MAX_SECONDS, unit: "s", min: None }
}

/// Seconds from `min` to `max`; anything else is an error.
pub fn seconds_between(min: f64, max: f64) -> Real {
    Real { max, unit: "s", min: Some(min) }
}

impl TypedValueParser for Real {
    type Value = f64;

    fn parse_ref(&self, cmd: &clap::Command, arg: Option<&clap::Arg>, value: &OsStr) -> Result<f64, clap::Error> {
        let name = option_name(arg);
        let text = value.to_string_lossy();
        let v: f64 = text.trim().parse().map_err(|_| invalid(cmd, format!("{name} takes a number, not `{text}`")))?;
        if !v.is_finite() {
            return Err(invalid(cmd, format!("{name} must be a finite number, not `{text}`")));
        }
        if v < 0.0 {
            return Err(invalid(cmd, format!("{name} must not be negative (got {text})")));
        }
        if let Some(min) = self.min.filter(|&m| !(m..=self.max).contains(&v)) {
            let unit = if self.unit.is_empty() { String::new() } else { format!(" {}", self.unit) };
            return Err(invalid(cmd, format!("{name} takes {min} to {}{unit}, not {text}", self.max)));
        }
        if v > self.max {
            eprintln!("note: {name} {text} is over the maximum of {} {}; using {}", self.max, self.unit, self.max);
            return Ok(self.max);
        }
        Ok(v)
    }
}

/// A whole number from `min` to `max`; anything else is an error that
/// states the range.
#[derive(Clone, Copy, Debug)]
pub struct Count {
    pub min: u64,
    pub max: u64,
}

/// Threads: 1 to [`MAX_THREADS`].
pub fn threads() -> Count {
    Count { min: 1, max: MAX_THREADS }
}

/// Threads as a `usize`: 1 to [`MAX_THREADS`].
pub fn threads_usize() -> CountUsize {
    CountUsize(threads())
}

/// The UCB exploration constant: finite, non-negative, at most 10.
pub fn exploration() -> Real {
    Real { max: 10.0, unit: "", min: None }
}

/// RAVE's bias: 0 (off) to 1.
pub fn rave() -> Real {
    Real { max: 1.0, unit: "", min: None }
}

impl Count {
    fn check(&self, cmd: &clap::Command, arg: Option<&clap::Arg>, value: &OsStr) -> Result<u64, clap::Error> {
        let name = option_name(arg);
        let text = value.to_string_lossy();
        let range = format!("a whole number from {} to {}", self.min, self.max);
        match text.trim().parse::<u64>() {
            Ok(v) if (self.min..=self.max).contains(&v) => Ok(v),
            Ok(v) if v < self.min => Err(invalid(cmd, format!("{name} must be at least {} (got {v})", self.min))),
            Ok(v) => Err(invalid(cmd, format!("{name} {v} is over the maximum of {}", self.max))),
            Err(_) => Err(invalid(cmd, format!("{name} takes {range}, not `{text}`"))),
        }
    }
}

/// [`Count`] for `usize` options.
#[derive(Clone, Copy, Debug)]
pub struct CountUsize(pub Count);

impl TypedValueParser for Count {
    type Value = u64;
    fn parse_ref(&self, cmd: &clap::Command, arg: Option<&clap::Arg>, value: &OsStr) -> Result<u64, clap::Error> {
        self.check(cmd, arg, value)
    }
}

impl TypedValueParser for CountUsize {
    type Value = usize;
    fn parse_ref(&self, cmd: &clap::Command, arg: Option<&clap::Arg>, value: &OsStr) -> Result<usize, clap::Error> {
        let v = self.0.check(cmd, arg, value)?;
        usize::try_from(v).map_err(|_| invalid(cmd, format!("{} {v} is too large here", option_name(arg))))
    }
}

/// A `usize` count from `min` to `max`.
pub fn count(min: u64, max: u64) -> CountUsize {
    CountUsize(Count { min, max })
}

/// A `u64` count from `min` to `max`.
pub fn count64(min: u64, max: u64) -> Count {
    Count { min, max }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct T {
        #[arg(long, default_value_t = 1.0, value_parser = seconds(), allow_hyphen_values = true)]
        seconds: f64,
        #[arg(long, default_value_t = 1, value_parser = count(1, 8), allow_hyphen_values = true)]
        threads: usize,
        #[arg(long, value_parser = seconds_between(0.1, 600.0), allow_hyphen_values = true)]
        budget: Option<f64>,
    }

    fn parse(args: &[&str]) -> Result<T, String> {
        T::try_parse_from(std::iter::once("t").chain(args.iter().copied())).map_err(|e| e.to_string())
    }

    #[test]
    fn reals_are_finite_non_negative_and_clamped() {
        assert_eq!(parse(&["--seconds", "2.5"]).unwrap().seconds, 2.5);
        assert_eq!(parse(&["--seconds", "1e300"]).unwrap().seconds, MAX_SECONDS);
        for bad in ["nan", "NaN", "inf", "-inf", "x", ""] {
            let e = parse(&["--seconds", bad]).unwrap_err();
            assert!(e.contains("--seconds"), "{bad}: {e}");
        }
        let e = parse(&["--seconds", "-1"]).unwrap_err();
        assert!(e.contains("must not be negative"), "{e}");
    }

    #[test]
    fn bounded_reals_state_their_range() {
        assert_eq!(parse(&["--budget", "0.1"]).unwrap().budget, Some(0.1));
        assert_eq!(parse(&["--budget", "600"]).unwrap().budget, Some(600.0));
        for bad in ["0.05", "601", "1e9"] {
            let e = parse(&["--budget", bad]).unwrap_err();
            assert!(e.contains("--budget takes 0.1 to 600 s"), "{bad}: {e}");
        }
        assert!(parse(&["--budget", "-1"]).unwrap_err().contains("must not be negative"));
    }

    #[test]
    fn counts_state_their_range() {
        assert_eq!(parse(&["--threads", "8"]).unwrap().threads, 8);
        assert!(parse(&["--threads", "0"]).unwrap_err().contains("at least 1"));
        assert!(parse(&["--threads", "9"]).unwrap_err().contains("maximum of 8"));
        assert!(parse(&["--threads", "-3"]).unwrap_err().contains("from 1 to 8"));
        assert!(parse(&["--threads", "99999999999999999999999"]).unwrap_err().contains("from 1 to 8"));
    }
}
