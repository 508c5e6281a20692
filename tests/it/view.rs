//! `dsh view` and the library's alignment and survival figures.

use dsh::view::{ModelSide, ReplacementKind, ViewOptions, align};
use dsh::{LoadOptions, LogSource};

use crate::support::sample;

fn view_of(path: &std::path::Path, upto: Option<u64>) -> dsh::view::View {
    let opts = LoadOptions {
        upto,
        ..LoadOptions::default()
    };
    align(
        &LogSource::File(path.into()),
        &opts,
        &ViewOptions::default(),
    )
    .unwrap()
}

#[test]
fn compacted_sample_links_every_replaced_event_to_its_checkpoint() {
    let v = view_of(&sample("compacted.jsonl"), None);
    let seqs: Vec<u64> = v.surface.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [43, 38, 52]);
    for s in [4, 19, 31] {
        let row = v.rows.iter().find(|r| r.seq == s).unwrap();
        assert!(
            matches!(
                row.model,
                ModelSide::Replaced {
                    by: 43,
                    position: Some(0),
                    replacement: ReplacementKind::Checkpoint,
                    ..
                }
            ),
            "{row:?}"
        );
    }
}
