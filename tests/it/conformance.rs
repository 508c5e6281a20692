//! The whole shared corpus through the library, against the reference
//! oracle's stored answers (`../shared/corpus/expected/<log>/<command>.json`).

use dsh::json::Value;
use dsh::log::{LoadOptions, LogSource, load};

use crate::support::{contains, corpus_logs, read_json, read_where_the_reference_refuses, shared};

fn messages_json(log: &dsh::LoadedLog) -> Value<'static> {
    let mut out = Vec::new();
    dsh::derive::write_messages_json(log, &mut out).unwrap();
    Value::parse(std::str::from_utf8(&out).unwrap())
        .unwrap()
        .into_owned()
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn corpus_surface_derive_header_match_the_reference() {
    let Some(shared) = shared("corpus_surface_derive_header_match_the_reference") else {
        return;
    };
    let logs = corpus_logs(&shared);
    assert!(
        logs.len() > 150,
        "the corpus should hold its logs, found {}",
        logs.len()
    );
    let mut failures = Vec::new();
    let mut checked = 0;
    for (name, path) in &logs {
        let exp_dir = shared.join("corpus/expected").join(name);
        let loaded = load(
            &LogSource::File(path.clone()),
            &LoadOptions::default(),
            &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {},
        );
        for cmd in ["surface", "derive", "header"] {
            let expected = read_json(&exp_dir.join(format!("{cmd}.json")));
            checked += 1;
            match (&loaded, expected.get("error")) {
                (Ok(_), Some(_)) if read_where_the_reference_refuses(name) => {}
                (Err(_), Some(_)) => {}
                (Err(e), None) => failures.push(format!(
                    "{name} {cmd}: refused but the reference accepts: {e}"
                )),
                (Ok(_), Some(err)) => failures.push(format!(
                    "{name} {cmd}: accepted but the reference refuses: {}",
                    err.to_json()
                )),
                (Ok(log), None) => {
                    let actual = match cmd {
                        "surface" => {
                            let doc = dsh::doc::surface::Surface::of(log, String::new());
                            Value::parse(&dsh::doc::to_string(&doc))
                                .unwrap()
                                .into_owned()
                        }
                        "derive" => messages_json(log),
                        _ => log.headers.to_json(),
                    };
                    if let Err(d) = contains(&expected, &actual, "$") {
                        failures.push(format!("{name} {cmd}: {d}"));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn corpus_load_counts_match_the_reference() {
    let Some(shared) = shared("corpus_load_counts_match_the_reference") else {
        return;
    };
    let mut failures = Vec::new();
    for (name, path) in corpus_logs(&shared) {
        let expected = read_json(&shared.join("corpus/expected").join(&name).join("load.json"));
        if expected.get("error").is_some() {
            continue;
        }
        let log = load(
            &LogSource::File(path),
            &LoadOptions::default(),
            &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {},
        )
        .unwrap();
        let closers = Value::Arr(log.closers.iter().map(|c| c.value.clone()).collect());
        let mut types = Value::obj();
        for (k, n) in &log.event_types {
            types = types.with(k, (*n).into());
        }
        let actual = Value::obj()
            .with("storedEvents", log.stored_events.into())
            .with("events", log.event_count().into())
            .with("endSeedAppended", log.end_seed_appended().into())
            .with("closers", closers)
            .with("eventTypes", types);
        let mut exp = expected.clone();
        exp.remove("header");
        if let Err(d) = contains(&exp, &actual, "$") {
            failures.push(format!("{name}: {d}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
