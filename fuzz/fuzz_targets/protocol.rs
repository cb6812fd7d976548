//! The GGP protocol's request parser (player/src/ggp/protocol.rs, included
//! by path: the player is a binary): any text gives a message or an error,
//! never a panic; a `start`'s rules go on to the front end.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../player/src/ggp/protocol.rs"]
mod protocol;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = protocol::peek_start_id(&text);
    let _ = protocol::parse_move(&text);
    let _ = protocol::forms("fuzz", &text);
    match protocol::parse(&text) {
        Ok(protocol::Message::Start { rules, id, .. }) => {
            assert_eq!(protocol::peek_start_id(&text).as_deref(), Some(id.as_str()));
            let _ = propel_compiler::load("start", rules.into_bytes());
        }
        Ok(protocol::Message::Play { moves: Some(moves), .. } | protocol::Message::Stop { moves: Some(moves), .. }) => {
            let _ = protocol::moves_kif(&moves);
        }
        Ok(_) | Err(_) => {}
    }
});
