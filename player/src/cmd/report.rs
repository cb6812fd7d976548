//! `propel report MATCH_DIR -o report.html`: the matches `propel match`
//! wrote (records and players' statistics) as one self-contained HTML page
//! with SVG charts: the standings first, then the matches, then each
//! match's charts in a grid that fills the page's width.

use crate::chart::{esc, lines, Series};
use anyhow::{Context as _, Result};
use propel_runtime::standings::{elo_text, score_text, Standings};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// A folder written by `propel match -o`, or a tournament's folder from
    /// the Python package (records in its `matches` folder).
    dir: PathBuf,
    #[arg(short, long, default_value = "report.html")]
    out: PathBuf,
}

/// Files `propel match` and the Python package's tournaments write beside
/// the records that are not records.
const NOT_RECORDS: [&str; 2] = ["standings.json", "scores.json"];

/// The folder that holds the records, and the records: `dir`, or where it
/// holds none, its `matches` folder (a tournament's layout).
fn record_dir(dir: &Path) -> Result<(PathBuf, Vec<Value>)> {
    let recs = records(dir)?;
    let sub = dir.join("matches");
    if recs.is_empty() && sub.is_dir() {
        return Ok((sub.clone(), records(&sub)?));
    }
    Ok((dir.to_path_buf(), recs))
}

fn records(dir: &Path) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter(|p| p.file_name().is_none_or(|n| !NOT_RECORDS.iter().any(|x| n == *x)))
        .collect();
    paths.sort();
    for p in paths {
        let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        match serde_json::from_str::<Value>(&text) {
            Ok(v) if v.get("matchId").is_some() => out.push(v),
            _ => tracing::warn!("{}: not a match record, skipped", p.display()),
        }
    }
    // In the order they were played.
    out.sort_by_key(|r| r["startTime"].as_u64().unwrap_or(0));
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

/// The game's name; records written before names came from the rules hold
/// a file path there, shown as its stem.
fn game_name(r: &Value) -> String {
    let name = r["gameName"].as_str().unwrap_or("?");
    if name.contains('/') || name.ends_with(".kif") {
        Path::new(name).file_stem().map_or(name.to_string(), |s| s.to_string_lossy().into_owned())
    } else {
        name.to_string()
    }
}

/// Points (turn, field) of a role's `play` lines; with `unsolved_only`,
/// only turns whose search had not solved the state (a solved root makes
/// iterations trivial, and their rate meaningless).
fn per_turn(lines: &[Value], field: &str, scale: f64, unsolved_only: bool) -> Vec<(f64, f64)> {
    lines
        .iter()
        .filter(|l| l["phase"] == "play")
        .filter(|l| !unsolved_only || l["solved"] != true)
        .filter_map(|l| Some((l["turn"].as_f64()?, l[field].as_f64()? * scale)))
        .collect()
}

/// The machines a player used and when it switched: "prover (from the
/// start) → propnet at 0.41 s (start clock) → jit at 5.20 s (turn 1)".
fn machine_story(lines: &[Value], start_clock: f64) -> String {
    let mut parts = vec!["prover (from the start)".to_string()];
    let mut last = "prover".to_string();
    for x in lines.iter().filter(|x| x["event"] == "machine") {
        let m = x["machine"].as_str().unwrap_or("?").to_string();
        let turn = x["turn"].as_u64().unwrap_or(0);
        // The builder hands over the propnet again once the analysis has
        // tuned the search: the same machine, new settings.
        let (again, why) = if m == last { (" again", ", with the analysed search settings") } else { ("", "") };
        let when = match x["at"].as_f64() {
            Some(at) if at <= start_clock => format!("at {at:.2} s (start clock{why})"),
            Some(at) => format!("at {at:.2} s (turn {turn}{why})"),
            None => format!("from turn {turn}"),
        };
        parts.push(format!("{m}{again} {when}"));
        last = m;
    }
    parts.join(" → ")
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5em 2em;color:#222}\
 h1{font-size:1.6em;margin-bottom:.2em} .sub{color:#555;margin-top:0}\
 table{border-collapse:collapse;margin:.5em 0 1.5em} td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}\
 th{background:#f3f3f3} td.n{text-align:right;font-variant-numeric:tabular-nums} .err{color:#b00}\
 .charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:12px}\
 .charts svg{width:100%;height:auto;border:1px solid #eee} section{margin-top:2em}";

pub fn run(a: Args) -> Result<ExitCode> {
    let (dir, recs) = record_dir(&a.dir)?;
    let st = Standings::of_records(&recs, &[]);
    let games = if st.games.is_empty() {
        "no matches".to_string()
    } else {
        recs.iter()
            .map(game_name)
            .fold(Vec::<String>::new(), |mut v, g| {
                if !v.contains(&g) {
                    v.push(g);
                }
                v
            })
            .join(", ")
    };
    let players: Vec<&str> = st.rows.iter().map(|r| r.player.as_str()).collect();
    let title = format!("{games}: {} match{} between {}", st.matches, if st.matches == 1 { "" } else { "es" }, {
        if players.is_empty() {
            "no players".to_string()
        } else {
            players.join(", ")
        }
    });
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
         <title>Propel: {}</title><style>{STYLE}</style></head><body>",
        esc(&title)
    );
    let _ = write!(h, "<h1>{}</h1>", esc(&title));
    let clocks: Vec<String> = recs
        .iter()
        .map(|r| format!("start {} s, play {} s", r["startClock"], r["playClock"]))
        .fold(Vec::new(), |mut v, c| {
            if !v.contains(&c) {
                v.push(c);
            }
            v
        });
    let _ = write!(
        h,
        "<p class=\"sub\">Clocks: {}. Records in {}.</p>",
        esc(&clocks.join("; ")),
        esc(&a.dir.display().to_string())
    );
    if recs.is_empty() {
        h.push_str("<p>No match records found.</p>");
    }
    standings_table(&mut h, &st);
    matches_table(&mut h, &recs);
    for r in &recs {
        match_section(&mut h, &dir, r);
    }
    h.push_str("</body></html>\n");
    std::fs::write(&a.out, h).with_context(|| format!("writing {}", a.out.display()))?;
    println!("wrote {} ({} matches)", a.out.display(), recs.len());
    Ok(ExitCode::SUCCESS)
}

fn standings_table(h: &mut String, st: &Standings) {
    if st.rows.is_empty() {
        return;
    }
    h.push_str(
        "<section><h2>Standings</h2><table><tr><th>player</th><th>matches</th><th>mean goal (95%)</th>\
         <th>wins</th><th>draws</th><th>losses</th><th>score (95%)</th><th>Elo (95%)</th><th>errors</th></tr>",
    );
    let mut rows: Vec<_> = st.rows.iter().collect();
    // Best first: by rating where there is one, else by mean goal.
    rows.sort_by(|x, y| {
        let key = |r: &propel_runtime::standings::Row| r.elo.map_or(r.mean_goal().0, |e| e.0);
        key(y).total_cmp(&key(x))
    });
    for r in rows {
        let (mean, half) = r.mean_goal();
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{mean:.1} ± {half:.1}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n{}\">{}</td></tr>",
            esc(&r.player),
            r.matches,
            r.wins,
            r.draws,
            r.losses,
            esc(&score_text(r)),
            esc(&elo_text(r)),
            if r.errors > 0 { " err" } else { "" },
            r.errors
        );
    }
    h.push_str("</table>");
    h.push_str(
        "<p class=\"sub\">Score: a win 1, a draw ½, a loss 0 (by goal against the best other role), with its \
         95% Wilson interval. Elo: Bradley-Terry ratings from every pair of seats of every match, relative to \
         the players' mean, with 95% intervals.</p>",
    );
    for w in st.warnings() {
        let _ = write!(h, "<p class=\"err\">{}</p>", esc(&w));
    }
    h.push_str("</section>");
}

fn matches_table(h: &mut String, recs: &[Value]) {
    if recs.is_empty() {
        return;
    }
    h.push_str(
        "<section><h2>Matches</h2><table><tr><th>match</th><th>game</th><th>players (role)</th><th>goals</th>\
         <th>turns</th><th>errors</th></tr>",
    );
    for r in recs {
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
            "<tr><td><a href=\"#{0}\">{0}</a></td><td>{1}</td><td>{2}</td><td>{3}</td><td class=\"n\">{4}</td>\
             <td class=\"n{5}\">{6}</td></tr>",
            esc(id),
            esc(&game_name(r)),
            esc(&players.iter().zip(&roles).map(|(p, r)| format!("{p} ({r})")).collect::<Vec<_>>().join(", ")),
            goals.join(" : "),
            r["moves"].as_array().map_or(0, |m| m.len()),
            if errors > 0 { " err" } else { "" },
            errors
        );
    }
    h.push_str("</table></section>");
}

fn match_section(h: &mut String, dir: &Path, r: &Value) {
    let id = r["matchId"].as_str().unwrap_or("");
    let roles = strs(&r["gameRoleNames"]);
    let players = strs(&r["playerNamesFromHost"]);
    let who = |i: usize| format!("{} ({})", players.get(i).map_or("?", |s| s.as_str()), roles[i]);
    let goals: Vec<String> =
        r["goalValues"].as_array().map(|g| g.iter().map(|x| x.to_string()).collect()).unwrap_or_default();
    let _ = write!(
        h,
        "<section><h2 id=\"{0}\">{1}: {2}</h2><p class=\"sub\">{0}; goals {3}</p>",
        esc(id),
        esc(&game_name(r)),
        esc(&(0..roles.len()).map(who).collect::<Vec<_>>().join(" vs ")),
        goals.join(" : ")
    );
    let play_ms = r["playClock"].as_f64().unwrap_or(0.0) * 1000.0;
    let start_clock = r["startClock"].as_f64().unwrap_or(0.0);
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
        .map(|i| (who(i), stats(dir, id, &roles[i])))
        .filter(|(_, s)| s.iter().any(|l| l["iterations"].as_u64().unwrap_or(0) > 0))
        .collect();
    let series = |field: &str, scale: f64, unsolved_only: bool| -> Vec<Series> {
        all_stats
            .iter()
            .map(|(n, l)| Series { name: n.clone(), points: per_turn(l, field, scale, unsolved_only) })
            .collect()
    };
    h.push_str("<div class=\"charts\">");
    h.push_str(&lines("Answer time per turn (ms)", "turn", &times, Some((play_ms, "play clock"))));
    if !all_stats.is_empty() {
        h.push_str(&lines(
            "Best-move value (expected goal)",
            "turn",
            &series("value", 1.0, false),
            Some((100.0, "100")),
        ));
        h.push_str(&lines(
            "Search iterations per second (root unsolved)",
            "turn",
            &series("iterations_per_s", 1.0, true),
            None,
        ));
        h.push_str(&lines("Rollouts per second", "turn", &series("rollouts_per_s", 1.0, false), None));
        h.push_str(&lines("Node pool use (%)", "turn", &series_pool(&all_stats), Some((100.0, "full"))));
        h.push_str(&lines("Search thread busy (%)", "turn", &series("search_busy", 100.0, false), None));
    }
    h.push_str("</div>");
    for (name, l) in &all_stats {
        let _ = write!(h, "<p>{}: {}</p>", esc(name), esc(&machine_story(l, start_clock)));
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
    h.push_str("</ol></details></section>");
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn machine_switches_with_their_times() {
        let lines = vec![
            json!({"event": "machine", "machine": "propnet", "turn": 0, "at": 0.41}),
            json!({"event": "machine", "machine": "propnet", "turn": 0, "at": 1.2}),
            json!({"event": "machine", "machine": "jit", "turn": 2, "at": 12.5}),
        ];
        assert_eq!(
            machine_story(&lines, 10.0),
            "prover (from the start) → propnet at 0.41 s (start clock) → propnet again at 1.20 s (start clock, \
             with the analysed search settings) → jit at 12.50 s (turn 2)"
        );
    }

    #[test]
    fn rates_of_solved_turns_are_left_out() {
        let lines = vec![
            json!({"phase": "play", "turn": 1, "iterations_per_s": 1000.0, "solved": false}),
            json!({"phase": "play", "turn": 2, "iterations_per_s": 9e6, "solved": true}),
        ];
        assert_eq!(per_turn(&lines, "iterations_per_s", 1.0, true), vec![(1.0, 1000.0)]);
        assert_eq!(per_turn(&lines, "iterations_per_s", 1.0, false).len(), 2);
    }

    #[test]
    fn a_tournaments_records_are_in_its_matches_folder() {
        let dir = std::env::temp_dir().join(format!("propel-report-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("matches")).unwrap();
        std::fs::write(dir.join("scores.json"), r#"{"matches": 1, "table": []}"#).unwrap();
        std::fs::write(dir.join("matches").join("m1.json"), r#"{"matchId": "m1", "startTime": 1}"#).unwrap();
        let (at, recs) = record_dir(&dir).unwrap();
        assert_eq!((at, recs.len()), (dir.join("matches"), 1));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn old_records_name_games_by_file_stem() {
        assert_eq!(game_name(&json!({"gameName": "games/tictactoe.kif"})), "tictactoe");
        assert_eq!(game_name(&json!({"gameName": "Connect four"})), "Connect four");
    }
}
