//! The player's HTTP request reader (player/src/ggp/http.rs, included by
//! path: the player is a binary), on bytes a client sends before it
//! closes: a request within the limits or an error answer, never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::time::Duration;

#[allow(dead_code)]
#[path = "../../player/src/ggp/http.rs"]
mod http;

fuzz_target!(|data: &[u8]| {
    // Small limits, so that the fuzzer reaches them.
    let limits = http::Limits {
        head_bytes: 512,
        headers: 8,
        body_bytes: 256,
        idle: Duration::from_secs(1),
        request: Duration::from_secs(1),
        ..http::Limits::default()
    };
    match http::parse_request(data, &limits) {
        Ok(rq) => assert!(rq.body.len() <= limits.body_bytes),
        Err(Some(answer)) => assert!((400..600).contains(&answer.status), "{}", answer.status),
        // The bytes ended before the request did: the client is gone.
        Err(None) => {}
    }
});
