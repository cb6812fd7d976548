//! Relation storage: rows of `TermId`s appended to a flat vector, a hash
//! set for duplicates, and hash indexes on the column sets the join plans
//! ask for. Rows are never reordered, so "the rows before N" is a stable
//! notion that semi-naive evaluation uses for its deltas.

use super::plan::{KeyShape, Path};
use crate::game::RelId;
use crate::term::{TermId, TermPool};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// Hash of a row or key. Term ids are small, dense integers, which
/// FxHash alone spreads poorly; each step multiplies and folds, and a
/// final avalanche (MurmurHash3's fmix64) mixes every bit.
pub(crate) fn hash_terms(terms: impl Iterator<Item = TermId>) -> u64 {
    let mut h: u64 = 0x243f_6a88_85a3_08d3;
    for t in terms {
        h = (h ^ t.0 as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^= h >> 32;
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// A hash index as intrusive chains: for each key hash the last row with
/// it, and for each row the previous row with the same hash. Inserting and
/// clearing allocate nothing once the vectors have grown.
#[derive(Clone, Debug)]
pub(crate) struct Index {
    pub(crate) shape: KeyShape,
    heads: FxHashMap<u64, u32>,
    prev: Vec<u32>,
}

/// The term at `path` in `row`, if the row has that shape.
fn term_at(pool: &TermPool, row: &[TermId], path: &Path) -> TermId {
    let mut t = row[path[0] as usize];
    for &i in &path[1..] {
        t = pool.args(t)[i as usize];
    }
    t
}

/// A row's key hash in an index of shape `shape`, or None when the row's
/// terms do not have the functors the shape expects (no probe can match it).
pub(crate) fn row_key(shape: &KeyShape, row: &[TermId], pool: &TermPool) -> Option<u64> {
    for (path, f, n) in shape.guards.iter() {
        let t = term_at(pool, row, path);
        if pool.functor(t) != *f || pool.args(t).len() != *n as usize {
            return None;
        }
    }
    if shape.guards.is_empty() {
        // Whole columns: no need to walk terms.
        return Some(hash_terms(shape.paths.iter().map(|p| row[p[0] as usize])));
    }
    Some(hash_terms(shape.paths.iter().map(|p| term_at(pool, row, p))))
}

/// End of an index chain.
pub(crate) const NO_ROW: u32 = u32::MAX;

impl Index {
    fn add(&mut self, key: u64, row: u32) {
        let prev = self.heads.insert(key, row).unwrap_or(NO_ROW);
        self.prev.push(prev);
    }
}

#[derive(Clone, Debug)]
pub struct Relation {
    arity: usize,
    cells: Vec<TermId>,
    len: u32,
    dedup: FxHashMap<u64, SmallVec<[u32; 1]>>,
    pub(crate) indexes: Vec<Index>,
}

impl Relation {
    pub(crate) fn new(arity: usize) -> Relation {
        Relation { arity, cells: Vec::new(), len: 0, dedup: FxHashMap::default(), indexes: Vec::new() }
    }

    /// The index of shape `shape`, built (over the rows already there) if new.
    pub(crate) fn index_for(&mut self, shape: &KeyShape, pool: &TermPool) -> usize {
        if let Some(i) = self.indexes.iter().position(|ix| ix.shape == *shape) {
            return i;
        }
        let mut ix = Index { shape: shape.clone(), heads: FxHashMap::default(), prev: Vec::new() };
        for r in 0..self.len {
            let row = &self.cells[r as usize * self.arity..(r as usize + 1) * self.arity];
            match row_key(shape, row, pool) {
                Some(k) => ix.add(k, r),
                None => ix.prev.push(NO_ROW),
            }
        }
        self.indexes.push(ix);
        self.indexes.len() - 1
    }

    /// Expected rows matching a probe of shape `shape`: the rows that fit
    /// its guards, divided by the number of distinct values at each key
    /// path. The statistics join planning uses.
    pub(crate) fn estimate(&self, shape: &KeyShape, pool: &TermPool) -> f64 {
        let mut fitting = 0usize;
        let mut seen: Vec<rustc_hash::FxHashSet<TermId>> = vec![Default::default(); shape.paths.len()];
        for r in 0..self.len() {
            let row = self.row(r);
            let fits = shape.guards.iter().all(|(path, f, n)| {
                let t = term_at(pool, row, path);
                pool.functor(t) == *f && pool.args(t).len() == *n as usize
            });
            if !fits {
                continue;
            }
            fitting += 1;
            for (i, p) in shape.paths.iter().enumerate() {
                seen[i].insert(term_at(pool, row, p));
            }
        }
        seen.iter().fold(fitting as f64, |est, s| est / s.len().max(1) as f64)
    }

    pub fn arity(&self) -> usize {
        self.arity
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn row(&self, i: usize) -> &[TermId] {
        &self.cells[i * self.arity..(i + 1) * self.arity]
    }

    pub fn rows(&self) -> impl Iterator<Item = &[TermId]> + '_ {
        (0..self.len()).map(move |i| self.row(i))
    }

    pub fn contains(&self, row: &[TermId]) -> bool {
        let h = hash_terms(row.iter().copied());
        self.dedup.get(&h).is_some_and(|rs| rs.iter().any(|&r| self.row(r as usize) == row))
    }

    /// Adds a row; false if it was already there. The pool holds the row's
    /// terms (indexes may key on parts of them).
    pub fn insert(&mut self, row: &[TermId], pool: &TermPool) -> bool {
        debug_assert_eq!(row.len(), self.arity);
        let h = hash_terms(row.iter().copied());
        if let Some(rs) = self.dedup.get(&h) {
            if rs.iter().any(|&r| self.row(r as usize) == row) {
                return false;
            }
        }
        let r = self.len;
        self.dedup.entry(h).or_default().push(r);
        self.cells.extend_from_slice(row);
        self.len += 1;
        for ix in &mut self.indexes {
            match row_key(&ix.shape, row, pool) {
                Some(k) => ix.add(k, r),
                None => ix.prev.push(NO_ROW),
            }
        }
        true
    }

    /// The last row whose key columns (of index `ix`) hash to `key`, or
    /// `NO_ROW`; [`Relation::chain_prev`] walks on to earlier ones. Callers
    /// still compare the rows: different keys may share a hash.
    pub(crate) fn probe(&self, ix: usize, key: u64) -> u32 {
        self.indexes[ix].heads.get(&key).copied().unwrap_or(NO_ROW)
    }

    /// The row before `row` on its chain in index `ix`, or `NO_ROW`.
    pub(crate) fn chain_prev(&self, ix: usize, row: u32) -> u32 {
        self.indexes[ix].prev[row as usize]
    }

    pub fn clear(&mut self) {
        self.cells.clear();
        self.len = 0;
        self.dedup.clear();
        for ix in &mut self.indexes {
            ix.heads.clear();
            ix.prev.clear();
        }
    }
}

/// Every relation of a program.
#[derive(Clone, Debug)]
pub struct Db {
    rels: Vec<Relation>,
}

impl Db {
    pub(crate) fn new(rels: Vec<Relation>) -> Db {
        Db { rels }
    }

    pub fn rel(&self, r: RelId) -> &Relation {
        &self.rels[r.index()]
    }

    pub fn rel_mut(&mut self, r: RelId) -> &mut Relation {
        &mut self.rels[r.index()]
    }

    /// Total rows over all relations.
    pub fn total_rows(&self) -> usize {
        self.rels.iter().map(|r| r.len()).sum()
    }

    pub fn relations(&self) -> impl Iterator<Item = (RelId, &Relation)> {
        self.rels.iter().enumerate().map(|(i, r)| (RelId(i as u32), r))
    }
}
