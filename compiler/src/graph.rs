//! Strongly connected components of a dependency graph (Tarjan's algorithm,
//! with an explicit stack: rule chains thousands of relations long must not
//! exhaust the Rust stack).

/// Strongly connected components as flat arrays (a network of millions
/// of components would otherwise allocate one list per component): group
/// `g` is `nodes[ends[g - 1]..ends[g]]`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Groups {
    nodes: Vec<u32>,
    ends: Vec<u32>,
}

impl Groups {
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(crate) fn get(&self, g: usize) -> &[u32] {
        let start = if g == 0 { 0 } else { self.ends[g - 1] as usize };
        &self.nodes[start..self.ends[g] as usize]
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u32]> + '_ {
        (0..self.len()).map(|g| self.get(g))
    }

    /// Every node of every group, in group order.
    pub(crate) fn nodes(&self) -> &[u32] {
        &self.nodes
    }

    /// The groups for which `keep` holds, in the same order.
    pub(crate) fn filter(&self, mut keep: impl FnMut(&[u32]) -> bool) -> Groups {
        let mut out = Groups::default();
        for g in self.iter().filter(|g| keep(g)) {
            out.nodes.extend_from_slice(g);
            out.ends.push(out.nodes.len() as u32);
        }
        out
    }
}

/// Returns the SCCs of the graph `succ` (node `i` has edges to `succ[i]`),
/// each as a list of nodes, in reverse topological order: every SCC comes
/// after all the SCCs it has edges into. With edges from a rule's head to
/// its body relations, that is evaluation order (dependencies first).
pub(crate) fn sccs(succ: &[Vec<u32>]) -> Vec<Vec<u32>> {
    scc_groups(succ.len(), |v| &succ[v as usize]).iter().map(<[u32]>::to_vec).collect()
}

/// [`sccs`] over `n` nodes whose successors `succ(v)` gives, as flat
/// [`Groups`]; each group's nodes sorted.
pub(crate) fn scc_groups<'a>(n: usize, succ: impl Fn(u32) -> &'a [u32]) -> Groups {
    const UNSEEN: u32 = u32::MAX;
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut out = Groups { nodes: Vec::with_capacity(n), ends: Vec::new() };
    let mut next_index = 0u32;
    // Call frames: (node, position in its successor list).
    let mut frames: Vec<(u32, usize)> = Vec::new();
    for root in 0..n as u32 {
        if index[root as usize] != UNSEEN {
            continue;
        }
        frames.push((root, 0));
        index[root as usize] = next_index;
        low[root as usize] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root as usize] = true;
        while let Some(&mut (v, ref mut pos)) = frames.last_mut() {
            let vu = v as usize;
            if let Some(&w) = succ(v).get(*pos) {
                *pos += 1;
                let wu = w as usize;
                if index[wu] == UNSEEN {
                    index[wu] = next_index;
                    low[wu] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[wu] = true;
                    frames.push((w, 0));
                } else if on_stack[wu] {
                    low[vu] = low[vu].min(index[wu]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                low[parent as usize] = low[parent as usize].min(low[vu]);
            }
            if low[vu] == index[vu] {
                let start = out.nodes.len();
                while let Some(w) = stack.pop() {
                    on_stack[w as usize] = false;
                    out.nodes.push(w);
                    if w == v {
                        break;
                    }
                }
                out.nodes[start..].sort_unstable();
                out.ends.push(out.nodes.len() as u32);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_in_dependency_order() {
        // 0 -> 1 -> 2 -> 1, 2 -> 3
        let g = vec![vec![1], vec![2], vec![1, 3], vec![]];
        let c = sccs(&g);
        assert_eq!(c, vec![vec![3], vec![1, 2], vec![0]]);
    }

    #[test]
    fn long_chain_does_not_overflow() {
        let n = 200_000;
        let g: Vec<Vec<u32>> = (0..n).map(|i| if i + 1 < n { vec![i as u32 + 1] } else { vec![] }).collect();
        let c = sccs(&g);
        assert_eq!(c.len(), n);
        assert_eq!(c[0], vec![n as u32 - 1]);
    }
}
