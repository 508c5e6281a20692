//! Byte-pair merging and the vocabularies it runs on.
//!
//! The tables are embedded compressed (`data/tokenizers/*.bin.zst`, built by
//! `data/tokenizers/build.py`; the README there gives each one's source and
//! licence) and expanded on first use, once per process: about 1.8 MB in the
//! binary instead of the ~47 MB of prebuilt automata the `bpe-openai` crate
//! embedded.
//!
//! Two merge rules share one merging loop ([`merge`]): the adjacent pair with
//! the lowest rank is merged first, the leftmost of equal ranks first, until
//! no pair has a rank.
//!
//! * **tiktoken** ([`Ranks`]): a pair's rank is the rank of the token its
//!   bytes concatenated make (tiktoken's `byte_pair_merge`);
//! * **Hugging Face BPE** ([`Merges`]): a pair's rank is the position of
//!   *that pair* in the merge list (`tokenizers`' `Word::merge_all`), so the
//!   same bytes split another way do not merge.

use rustc_hash::FxHashMap;

/// One symbol of a piece being merged: its bytes `start..end` in the piece
/// and its token id.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sym {
    pub start: u32,
    pub end: u32,
    pub id: u32,
}

/// A merge rule: the rank and the merged token of two adjacent symbols.
pub(crate) trait Rule {
    /// The single-byte symbols a piece starts as.
    fn bytes(&self, piece: &[u8], out: &mut Vec<Sym>);
    /// `(rank, merged id)` of `a` followed by `b`, if they merge.
    fn pair(&self, piece: &[u8], a: Sym, b: Sym) -> Option<(u32, u32)>;
}

/// Pieces up to this many bytes are merged by scanning for the lowest rank;
/// longer ones through a heap (the scan is quadratic).
const SCAN_MAX: usize = 96;

/// Merge `piece` under `rule`; the tokens are left in `syms`.
pub(crate) fn merge<R: Rule>(rule: &R, piece: &[u8], syms: &mut Vec<Sym>) {
    syms.clear();
    rule.bytes(piece, syms);
    if syms.len() < 2 {
        return;
    }
    if syms.len() <= SCAN_MAX {
        merge_scan(rule, piece, syms);
    } else {
        merge_heap(rule, piece, syms);
    }
}

fn merge_scan<R: Rule>(rule: &R, piece: &[u8], syms: &mut Vec<Sym>) {
    // ranks[i]: the rank of syms[i] + syms[i + 1].
    let mut ranks: Vec<(u32, u32)> = syms
        .windows(2)
        .map(|w| rule.pair(piece, w[0], w[1]).unwrap_or((u32::MAX, 0)))
        .collect();
    loop {
        let mut best = u32::MAX;
        let mut at = usize::MAX;
        for (i, &(r, _)) in ranks.iter().enumerate() {
            if r < best {
                best = r;
                at = i;
            }
        }
        if at == usize::MAX {
            return;
        }
        let id = ranks[at].1;
        syms[at] = Sym {
            start: syms[at].start,
            end: syms[at + 1].end,
            id,
        };
        syms.remove(at + 1);
        ranks.remove(at);
        if at + 1 < syms.len() {
            ranks[at] = rule
                .pair(piece, syms[at], syms[at + 1])
                .unwrap_or((u32::MAX, 0));
        }
        if at > 0 {
            ranks[at - 1] = rule
                .pair(piece, syms[at - 1], syms[at])
                .unwrap_or((u32::MAX, 0));
        }
    }
}

/// The same merges in O(n log n): a heap of candidate pairs keyed by
/// (rank, left position), a linked list of live symbols, and stale entries
/// skipped when their symbols have changed since.
fn merge_heap<R: Rule>(rule: &R, piece: &[u8], syms: &mut Vec<Sym>) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let n = syms.len();
    let mut next: Vec<usize> = (1..=n).collect();
    let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
    let mut alive = vec![true; n];
    // (rank, left index, the merged id, the right index it was made with).
    let mut heap: BinaryHeap<Reverse<(u32, usize, u32, usize)>> = BinaryHeap::new();
    for i in 0..n - 1 {
        if let Some((r, id)) = rule.pair(piece, syms[i], syms[i + 1]) {
            heap.push(Reverse((r, i, id, i + 1)));
        }
    }
    while let Some(Reverse((_, i, id, j))) = heap.pop() {
        // Stale: either side merged away, or no longer neighbours, or the
        // left one grew (then its end moved past j's start).
        if !alive[i] || !alive[j] || next[i] != j || syms[i].end != syms[j].start {
            continue;
        }
        if rule.pair(piece, syms[i], syms[j]).map(|p| p.1) != Some(id) {
            continue;
        }
        syms[i] = Sym {
            start: syms[i].start,
            end: syms[j].end,
            id,
        };
        alive[j] = false;
        next[i] = next[j];
        if next[i] < n {
            prev[next[i]] = i;
            if let Some((r, id)) = rule.pair(piece, syms[i], syms[next[i]]) {
                heap.push(Reverse((r, i, id, next[i])));
            }
        }
        let p = prev[i];
        if p < n
            && let Some((r, id)) = rule.pair(piece, syms[p], syms[i])
        {
            heap.push(Reverse((r, p, id, i)));
        }
    }
    let mut k = 0;
    for i in 0..n {
        if alive[i] {
            syms[k] = syms[i];
            k += 1;
        }
    }
    syms.truncate(k);
}

/// A tiktoken vocabulary: every token's bytes and rank (its id).
pub(crate) struct Ranks {
    ranks: FxHashMap<&'static [u8], u32>,
}

impl Ranks {
    /// Expand a `DSHTIK1` table (see `data/tokenizers/build.py`).
    pub(crate) fn load(compressed: &[u8]) -> Ranks {
        let raw: &'static [u8] = Box::leak(expand(compressed).into_boxed_slice());
        let bad = || panic!("an embedded tiktoken table is malformed");
        if raw.len() < 12 || &raw[..8] != b"DSHTIK1\0" {
            bad();
        }
        let n = u32::from_le_bytes([raw[8], raw[9], raw[10], raw[11]]) as usize;
        let lens = raw.get(12..12 + n).unwrap_or_else(&bad);
        let mut at = 12 + n;
        let mut ranks = FxHashMap::default();
        ranks.reserve(n);
        for (rank, &len) in lens.iter().enumerate() {
            let token = raw.get(at..at + len as usize).unwrap_or_else(&bad);
            ranks.insert(token, rank as u32);
            at += len as usize;
        }
        Ranks { ranks }
    }

    /// Tokens in the vocabulary.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ranks.len()
    }
}

impl Rule for Ranks {
    fn bytes(&self, piece: &[u8], out: &mut Vec<Sym>) {
        out.extend(piece.iter().enumerate().map(|(i, b)| {
            Sym {
                start: i as u32,
                end: i as u32 + 1,
                id: self
                    .ranks
                    .get(std::slice::from_ref(b))
                    .copied()
                    .unwrap_or(0),
            }
        }));
    }

    fn pair(&self, piece: &[u8], a: Sym, b: Sym) -> Option<(u32, u32)> {
        let r = *self.ranks.get(&piece[a.start as usize..b.end as usize])?;
        Some((r, r))
    }
}

/// A Hugging Face byte-level BPE: the byte tokens and the merge list.
pub(crate) struct Merges {
    /// Token id of each byte value.
    byte_ids: [u32; 256],
    /// (left id, right id) → (rank, merged id).
    pairs: FxHashMap<u64, (u32, u32)>,
    /// Tokens in the vocabulary (bytes and merges).
    #[cfg_attr(not(test), allow(dead_code))]
    pub vocab: u32,
}

impl Merges {
    /// Expand a `DSHBPE1` table (see `data/tokenizers/build.py`).
    pub(crate) fn load(compressed: &[u8]) -> Merges {
        let raw = expand(compressed);
        let bad = || panic!("an embedded merge table is malformed");
        let u32_at = |at: usize| -> u32 {
            let b = raw.get(at..at + 4).unwrap_or_else(&bad);
            u32::from_le_bytes([b[0], b[1], b[2], b[3]])
        };
        if raw.len() < 8 + 4 + 256 + 8 || &raw[..8] != b"DSHBPE1\0" {
            bad();
        }
        let first_byte = u32_at(8);
        let mut byte_ids = [0u32; 256];
        for (i, &b) in raw[12..12 + 256].iter().enumerate() {
            byte_ids[b as usize] = first_byte + i as u32;
        }
        let n = u32_at(268) as usize;
        let first_merge = u32_at(272);
        let mut pairs = FxHashMap::default();
        pairs.reserve(n);
        for r in 0..n {
            let (a, b) = (u32_at(276 + 8 * r), u32_at(280 + 8 * r));
            pairs.insert(key(a, b), (r as u32, first_merge + r as u32));
        }
        Merges {
            byte_ids,
            pairs,
            vocab: first_merge + n as u32 - first_byte,
        }
    }
}

fn key(a: u32, b: u32) -> u64 {
    (a as u64) << 32 | b as u64
}

impl Rule for Merges {
    fn bytes(&self, piece: &[u8], out: &mut Vec<Sym>) {
        out.extend(piece.iter().enumerate().map(|(i, &b)| Sym {
            start: i as u32,
            end: i as u32 + 1,
            id: self.byte_ids[b as usize],
        }));
    }

    fn pair(&self, _piece: &[u8], a: Sym, b: Sym) -> Option<(u32, u32)> {
        self.pairs.get(&key(a.id, b.id)).copied()
    }
}

/// Decompress an embedded table.
fn expand(compressed: &[u8]) -> Vec<u8> {
    zstd::stream::decode_all(compressed).expect("an embedded tokenizer table decompresses")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy rule over letters: "ab" < "bc" < "abc" by rank, as tiktoken
    /// ranks them; the scan and the heap must agree on every string.
    struct Toy;

    impl Rule for Toy {
        fn bytes(&self, piece: &[u8], out: &mut Vec<Sym>) {
            out.extend((0..piece.len()).map(|i| Sym {
                start: i as u32,
                end: i as u32 + 1,
                id: 0,
            }));
        }
        fn pair(&self, piece: &[u8], a: Sym, b: Sym) -> Option<(u32, u32)> {
            let r = match &piece[a.start as usize..b.end as usize] {
                b"ab" => 1,
                b"bc" => 2,
                b"abc" => 3,
                b"aa" => 4,
                b"aaaa" => 5,
                b"cab" => 6,
                _ => return None,
            };
            Some((r, r))
        }
    }

    #[test]
    fn the_heap_merges_as_the_scan_does() {
        let mut rng = crate::test_rng::Lcg(3);
        for _ in 0..3000 {
            let len = 1 + rng.index(300);
            let piece: Vec<u8> = (0..len).map(|_| b"abc"[rng.index(3)]).collect();
            let (mut scan, mut heap) = (Vec::new(), Vec::new());
            Toy.bytes(&piece, &mut scan);
            merge_scan(&Toy, &piece, &mut scan);
            Toy.bytes(&piece, &mut heap);
            merge_heap(&Toy, &piece, &mut heap);
            let spans = |s: &[Sym]| s.iter().map(|x| (x.start, x.end)).collect::<Vec<_>>();
            assert_eq!(
                spans(&scan),
                spans(&heap),
                "{}",
                String::from_utf8_lossy(&piece)
            );
        }
    }

    #[test]
    fn lowest_rank_first_leftmost_on_ties() {
        let mut s = Vec::new();
        merge(&Toy, b"aaaaa", &mut s);
        // aa aa a, then aaaa a.
        assert_eq!(
            s.iter().map(|x| (x.start, x.end)).collect::<Vec<_>>(),
            [(0, 4), (4, 5)]
        );
    }
}
