//! The generation-3 decoder: system head, `{startSeq,endSeq}`, image offload,
//! ignorable events (session-log §13).

use dsh::json::Value;

use crate::support::{dsh, json_of};

/// An authored generation-3 log: a system head, an image the user sent, a
/// head replacement, an image offload and an unknown ignorable event.
fn g3_log() -> String {
    let image = r#"{"type":"image","attachment":{"attachmentId":"sha256:ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12","mediaType":"image/png","bytes":100,"width":10,"height":10,"name":"diagram.png"}}"#;
    let model =
        r#""source":{"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"}"#;
    let sys = r#""source":{"kind":"plugin","plugin":"@knyazevai/dsh-system-prompt"}"#;
    [
        r#"{"type":"session","version":3,"id":"g3-sample","createdAt":1767225600000,"cwd":"/w","isSeeded":false,"delegationDepth":0}"#.to_string(),
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#.into(),
        r#"{"type":"step/start","seq":1,"time":2,"data":{"turn":1,"step":1}}"#.into(),
        format!(r#"{{"type":"system/message","seq":2,"time":3,"data":{{"turn":1,"step":1,"message":{{"id":"s1","role":"system","content":[{{"type":"text","text":"Be brief."}}],{sys}}}}},"surfaceOp":"append"}}"#),
        format!(r#"{{"type":"user/message","seq":3,"time":4,"data":{{"id":"u1","role":"user","content":[{{"type":"text","text":"Explain this."}},{image}],"source":{{"kind":"user"}}}},"surfaceOp":"append"}}"#),
        r#"{"type":"request/header","seq":4,"time":5,"data":{"header":{"config":{"provider":"deepseek-official","model":"deepseek-v4-flash"}},"reason":"initial"}}"#.into(),
        format!(r#"{{"type":"assistant/message","seq":5,"time":6,"data":{{"turn":1,"step":1,"message":{{"id":"a1","role":"assistant","content":[{{"type":"text","text":"A flow chart."}}],{model}}},"stream":[]}},"surfaceOp":"append"}}"#),
        r#"{"type":"step/end","seq":6,"time":7,"data":{"turn":1,"step":1}}"#.into(),
        r#"{"type":"turn/end","seq":7,"time":8,"data":{"turn":1,"reason":{"kind":"completed"}}}"#.into(),
        r#"{"type":"turn/start","seq":8,"time":9,"data":{"turn":2}}"#.into(),
        r#"{"type":"step/start","seq":9,"time":10,"data":{"turn":2,"step":1}}"#.into(),
        format!(r#"{{"type":"system/message","seq":10,"time":11,"data":{{"turn":2,"step":1,"message":{{"id":"s2","role":"system","content":[{{"type":"text","text":"Be very brief."}}],{sys}}}}},"sourceEventSeqs":[2],"surfaceOp":{{"op":"replace","startSeq":2,"endSeq":2}}}}"#),
        r#"{"type":"image/offload","seq":11,"time":12,"data":{"targets":[{"seq":3,"imageIndexes":[0]}]}}"#.into(),
        r#"{"type":"acme/note","seq":12,"time":13,"data":{"x":1},"ignorable":true}"#.into(),
        r#"{"type":"step/end","seq":13,"time":14,"data":{"turn":2,"step":1}}"#.into(),
        r#"{"type":"turn/end","seq":14,"time":15,"data":{"turn":2,"reason":{"kind":"completed"}}}"#.into(),
    ]
    .join("\n")
        + "\n"
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn system_head_replacement_and_image_offload() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "g3.jsonl", &g3_log());
    let (v, code) = json_of(&["surface", "--json", &p]);
    assert_eq!(code, 0);
    let nodes: Vec<u64> = v
        .get("nodes")
        .unwrap()
        .as_arr()
        .unwrap()
        .iter()
        .map(|n| n.as_count().unwrap())
        .collect();
    assert_eq!(nodes, [10, 3, 5]);
    assert_eq!(v.get("replaceGeneration").unwrap().as_count(), Some(1));
    assert_eq!(v.get("contentGeneration").unwrap().as_count(), Some(2));
    let (m, _) = json_of(&["messages", "--json", &p]);
    let msgs = m.as_arr().unwrap();
    assert_eq!(msgs[0].get("id").unwrap().as_str().unwrap(), "s2");
    let img = &msgs[1].get("content").unwrap().as_arr().unwrap()[1];
    assert!(img.get("offloaded").unwrap().is_true());
    // The request projection replaces the offloaded image with its placeholder.
    let (r, _) = json_of(&["messages", "--json", "--request", &p]);
    let text = r.as_arr().unwrap()[1]
        .get("content")
        .unwrap()
        .as_arr()
        .unwrap()[1]
        .get("text")
        .unwrap()
        .as_str()
        .unwrap()
        .into_owned();
    assert!(
        text.starts_with(
            "[image omitted to fit request image limits; \"diagram.png\" (sha256:ab12"
        ),
        "{text}"
    );
}

#[test]
fn invalid_generation_3_variants_are_refused() {
    let base = g3_log();
    let cases = [
        // Head protection: a user message cannot replace the system head.
        (
            r#""type":"system/message","seq":10"#,
            r#""type":"user/message","seq":10"#,
        ),
        // The G0 replace spelling is not G3's.
        (
            r#""surfaceOp":{"op":"replace","startSeq":2,"endSeq":2}"#,
            r#""surfaceOp":{"op":"replace","start":2,"end":2}"#,
        ),
        // A header system prompt is forbidden in G3.
        (
            r#""header":{"config":{"provider":"deepseek-official","model":"deepseek-v4-flash"}}"#,
            r#""header":{"config":{"provider":"deepseek-official","model":"deepseek-v4-flash"},"system":""}"#,
        ),
        // Offload indexes must be strictly increasing, and name a user/tool node.
        (r#""imageIndexes":[0]"#, r#""imageIndexes":[0,0]"#),
        (
            r#"{"seq":3,"imageIndexes":[0]}"#,
            r#"{"seq":5,"imageIndexes":[0]}"#,
        ),
        (r#""imageIndexes":[0]"#, r#""imageIndexes":[1]"#),
        // Assistant messages carry no sourceEventSeqs in G3.
        (
            r#""stream":[]},"surfaceOp":"append""#,
            r#""stream":[]},"sourceEventSeqs":[4],"surfaceOp":"append""#,
        ),
        // Unknown events must be ignorable.
        (r#","ignorable":true"#, ""),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, (from, to)) in cases.iter().enumerate() {
        assert!(base.contains(from), "case {i}: pattern not found");
        let p = write(&dir, &format!("bad{i}.jsonl"), &base.replacen(from, to, 1));
        let out = dsh().args(["surface", "--json", &p]).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(3),
            "case {i} should be refused: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            Value::parse(std::str::from_utf8(&out.stdout).unwrap())
                .unwrap()
                .get("error")
                .is_some()
        );
    }
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn the_spec_example_when_present() {
    let Some(shared) = crate::support::shared("the_spec_example_when_present") else {
        return;
    };
    let p = shared.join("spec/examples/v3-system-head-image-offload.jsonl");
    let (v, code) = json_of(&["surface", "--json", p.to_str().unwrap()]);
    assert_eq!(code, 0);
    let nodes: Vec<u64> = v
        .get("nodes")
        .unwrap()
        .as_arr()
        .unwrap()
        .iter()
        .map(|n| n.as_count().unwrap())
        .collect();
    assert_eq!(nodes, [12, 3, 6, 11, 17]);
    assert_eq!(v.get("contentGeneration").unwrap().as_count(), Some(2));
    let (m, _) = json_of(&["messages", "--json", p.to_str().unwrap()]);
    let ids: Vec<String> = m
        .as_arr()
        .unwrap()
        .iter()
        .map(|x| x.get("id").unwrap().as_str().unwrap().into_owned())
        .collect();
    assert_eq!(ids, ["m-s2", "m-u1", "m-a1", "m-u2", "m-a2"]);
}

#[test]
fn a_damaged_line_inside_a_complete_zstd_frame_is_fatal() {
    // Plain: a garbage last line is a torn tail. Zstandard: a complete,
    // checksummed frame must hold only committed lines, so it is corruption.
    let text = g3_log() + "{garbage\n";
    let (head, body) = text.split_at(text.find('\n').unwrap() + 1);
    let dir = tempfile::tempdir().unwrap();
    let plain = write(&dir, "g3.jsonl", &text);
    dsh().args(["surface", "--json", &plain]).assert().success();
    let mut z = zstd::bulk::compress(head.as_bytes(), 3).unwrap();
    z.extend(zstd::bulk::compress(body.as_bytes(), 3).unwrap());
    let p = dir.path().join("g3.jsonl.zstd");
    std::fs::write(&p, z).unwrap();
    let out = dsh().args(["surface", "--json"]).arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains("unparsable committed event at line 16"));
}
