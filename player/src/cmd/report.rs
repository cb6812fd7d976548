//! `propel report MATCH_DIR -o report.html`: the matches `propel match`
//! wrote (records and players' statistics) as one self-contained HTML page
//! with SVG charts.

use crate::chart::{esc, lines, Series};
use anyhow::{Context as _, Result};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// A folder written by `propel match -o`.
    dir: PathBuf,
    #[arg(short, long, default_value = "report.html")]
    out: PathBuf,
}

fn records(dir: &Path) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    for p in paths {
        let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        match serde_json::from_str::<Value>(&text) {
            Ok(v) if v.get("matchId").is_some() => out.push(v),
            _ => tracing::warn!("{}: not a match record, skipped", p.display()),
        }
    }
    Ok(out)
}

/// A role's statistics lines, when its player served them.
fn stats(dir: &Path, id: &str, role: &str) -> Vec<Value> {
    let p = dir.join(id).join(format!("{role}.stats.jsonl"));
    let Ok(text) = std::fs::read_to_string(p) else { return Vec::new() };
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().map(|x| x.as_str().unwrap_or("").to_string()).collect()).unwrap_or_default()
}

/// Points (turn, field) of a role's `play` lines.
fn per_turn(lines: &[Value], field: &str, scale: f64) -> Vec<(f64, f64)> {
    lines
        .iter()
        .filter(|l| l["phase"] == "play")
        .filter_map(|l| Some((l["turn"].as_f64()?, l[field].as_f64()? * scale)))
        .collect()
}

pub fn run(a: Args) -> Result<ExitCode> {
    let recs = records(&a.dir)?;
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Propel matches: {}</title><style>\
         body{{font-family:sans-serif;margin:2em;max-width:1400px}} table{{border-collapse:collapse}} \
         td,th{{border:1px solid #ccc;padding:3px 8px;text-align:left}} .err{{color:#b00}} \
         .charts{{display:flex;flex-wrap:wrap;gap:12px}}</style></head><body>",
        esc(&a.dir.display().to_string())
    );
    let _ = write!(h, "<h1>Matches in {}</h1>", esc(&a.dir.display().to_string()));
    if recs.is_empty() {
        h.push_str("<p>No match records found.</p>");
    }
    h.push_str(
        "<table><tr><th>match</th><th>game</th><th>players (role)</th><th>goals</th><th>turns</th><th>errors</th></tr>",
    );
    for r in &recs {
        let roles = strs(&r["gameRoleNames"]);
        let players = strs(&r["playerNamesFromHost"]);
        let goals: Vec<String> =
            r["goalValues"].as_array().map(|g| g.iter().map(|x| x.to_string()).collect()).unwrap_or_default();
        let errors = r["errors"].as_array().map_or(0, |t| {
            t.iter()
                .flat_map(|e| e.as_array().into_iter().flatten())
                .filter(|e| e.as_str().is_some_and(|s| !s.is_empty()))
                .count()
        }) + strs(&r["startErrors"]).iter().filter(|e| !e.is_empty()).count();
        let id = r["matchId"].as_str().unwrap_or("");
        let _ = write!(
            h,
            "<tr><td><a href=\"#{0}\">{0}</a></td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td><td{5}>{6}</td></tr>",
            esc(id),
            esc(r["gameName"].as_str().unwrap_or("")),
            esc(&players.iter().zip(&roles).map(|(p, r)| format!("{p} ({r})")).collect::<Vec<_>>().join(", ")),
            goals.join(" : "),
            r["moves"].as_array().map_or(0, |m| m.len()),
            if errors > 0 { " class=\"err\"" } else { "" },
            errors
        );
    }
    h.push_str("</table>");

    for r in &recs {
        let id = r["matchId"].as_str().unwrap_or("");
        let roles = strs(&r["gameRoleNames"]);
        let players = strs(&r["playerNamesFromHost"]);
        let who = |i: usize| format!("{} ({})", players.get(i).map_or("?", |s| s.as_str()), roles[i]);
        let _ = write!(h, "<h2 id=\"{0}\">{0}</h2>", esc(id));
        let play_ms = r["playClock"].as_f64().unwrap_or(0.0) * 1000.0;
        let times: Vec<Series> = (0..roles.len())
            .map(|i| Series {
                name: who(i),
                points: r["moveTimes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .enumerate()
                    .filter_map(|(t, m)| Some((t as f64, m.get(i)?.as_f64()?)))
                    .collect(),
            })
            .collect();
        // Players that searched (random and legal players serve lines without search).
        let all_stats: Vec<(String, Vec<Value>)> = (0..roles.len())
            .map(|i| (who(i), stats(&a.dir, id, &roles[i])))
            .filter(|(_, s)| s.iter().any(|l| l["iterations"].as_u64().unwrap_or(0) > 0))
            .collect();
        let series = |field: &str, scale: f64| -> Vec<Series> {
            all_stats.iter().map(|(n, l)| Series { name: n.clone(), points: per_turn(l, field, scale) }).collect()
        };
        h.push_str("<div class=\"charts\">");
        h.push_str(&lines("Answer time per turn (ms)", "turn", &times, Some((play_ms, "play clock"))));
        if !all_stats.is_empty() {
            h.push_str(&lines("Best-move value (expected goal)", "turn", &series("value", 1.0), Some((100.0, "100"))));
            h.push_str(&lines("Search iterations per second", "turn", &series("iterations_per_s", 1.0), None));
            h.push_str(&lines("Rollouts per second", "turn", &series("rollouts_per_s", 1.0), None));
            h.push_str(&lines("Node pool use (%)", "turn", &series_pool(&all_stats), Some((100.0, "full"))));
            h.push_str(&lines("Search thread busy (%)", "turn", &series("search_busy", 100.0), None));
        }
        h.push_str("</div>");
        for (name, l) in &all_stats {
            // Every match starts on the prover; the events say what came next.
            let mut machines = vec!["prover".to_string()];
            machines.extend(
                l.iter()
                    .filter(|x| x["event"] == "machine")
                    .map(|x| format!("{} (from turn {})", x["machine"].as_str().unwrap_or("?"), x["turn"])),
            );
            let _ = write!(h, "<p>{}: machines: {}</p>", esc(name), esc(&machines.join(" → ")));
        }
        let errs: Vec<String> = r["errors"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .flat_map(|(t, e)| {
                strs(e)
                    .into_iter()
                    .enumerate()
                    .filter(|(_, s)| !s.is_empty())
                    .map(move |(i, s)| (t, i, s))
                    .collect::<Vec<_>>()
            })
            .map(|(t, i, s)| format!("turn {t}, {}: {s}", who(i)))
            .collect();
        if !errs.is_empty() {
            let _ = write!(h, "<p class=\"err\">Errors: {}</p>", esc(&errs.join("; ")));
        }
        let moves: Vec<String> = r["moves"].as_array().into_iter().flatten().map(|m| strs(m).join(" / ")).collect();
        let _ = write!(h, "<details><summary>moves</summary><ol start=\"0\">");
        for m in moves {
            let _ = write!(h, "<li>{}</li>", esc(&m));
        }
        h.push_str("</ol></details>");
    }
    h.push_str("</body></html>\n");
    std::fs::write(&a.out, h).with_context(|| format!("writing {}", a.out.display()))?;
    println!("wrote {} ({} matches)", a.out.display(), recs.len());
    Ok(ExitCode::SUCCESS)
}

fn series_pool(all: &[(String, Vec<Value>)]) -> Vec<Series> {
    all.iter()
        .map(|(n, l)| Series {
            name: n.clone(),
            points: l
                .iter()
                .filter(|x| x["phase"] == "play")
                .filter_map(|x| {
                    let pool = x["pool"].as_f64().filter(|&p| p > 0.0)?;
                    Some((x["turn"].as_f64()?, 100.0 * x["nodes"].as_f64()? / pool))
                })
                .collect(),
        })
        .collect()
}
