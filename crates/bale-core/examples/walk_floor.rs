//! The floor of the core's walk: what `encode` itself costs per container,
//! with a source that does nothing but hand over children.
//!
//! ```text
//! cargo run --release -p bale-core --example walk_floor [-- CHAINS DEPTH ROUNDS]
//! ```
//!
//! The value is the shape sweep's "deep lists" cell (`benchmarks/bench_sweep.py`,
//! `deep_lists`): a list of CHAINS chains (400 by default), each DEPTH lists
//! (500) nested in one another around an int. Every container goes through
//! the walk as the compactor's do: a frame opened on the heap stack, its
//! child asked for and visited, and the LIST written around the child's slot
//! once the child is done. What the walk costs a level here is the part of
//! `compact`'s cost on that cell that does not read Python objects: the
//! price of writing children first at any depth without native recursion
//! (see `benchmarks/sweep_profiles.md`).

use std::time::Instant;

use bale_core::encoder::NO_IDENTITY;
use bale_core::{encode, Builder, Container, Source, Walk};

/// Node `ROOT` is the outer list; node `c * depth + l` is level `l` of chain `c`.
const ROOT: usize = usize::MAX;

struct Chains {
    chains: usize,
    depth: usize,
    /// Cursor: the node, and how many of its children were handed over.
    walk: Walk<(usize, usize)>,
    dst: Builder,
}

impl Source for Chains {
    type Node = usize;
    type Cursor = (usize, usize);
    type Error = ();

    fn parts(&mut self) -> (&mut Walk<(usize, usize)>, &mut Builder) {
        (&mut self.walk, &mut self.dst)
    }

    fn visit(&mut self, node: usize) -> Result<Option<u64>, ()> {
        if node != ROOT && node % self.depth == self.depth - 1 {
            // The innermost level: a list of one int, written at once (as
            // the compactor writes it, a row of numbers).
            return Ok(Some(self.dst.num_list(false, &[node as u64])));
        }
        self.walk.open((node, 0), NO_IDENTITY);
        Ok(None)
    }

    fn next_child(&mut self) -> Result<Option<usize>, ()> {
        let (node, handed) = self.walk.top().expect("an open container");
        let (node, count) = (*node, if *node == ROOT { self.chains } else { 1 });
        if *handed == count {
            return Ok(None);
        }
        let child = if node == ROOT { *handed * self.depth } else { node + 1 };
        *handed += 1;
        Ok(Some(child))
    }

    fn container(&self, _: &(usize, usize)) -> Result<Container, ()> {
        Ok(Container::Seq { tuple: false })
    }
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("CHAINS DEPTH ROUNDS")).collect();
    let chains = args.first().copied().unwrap_or(400);
    let depth = args.get(1).copied().unwrap_or(500).max(1);
    let rounds = args.get(2).copied().unwrap_or(50);
    let mut best = f64::INFINITY;
    let mut bytes = 0;
    for _ in 0..rounds {
        let mut source = Chains { chains, depth, walk: Walk::new(false), dst: Builder::new() };
        let t = Instant::now();
        let root = encode(&mut source, ROOT).expect("the chains are written");
        let out = source.dst.finish(root);
        best = best.min(t.elapsed().as_secs_f64());
        bytes = out.len();
    }
    let containers = chains * depth;
    println!(
        "{chains} chains of {depth} nested lists ({containers} lists, {bytes} bytes): \
         best of {rounds} {:.3} ms, {:.1} ns a list",
        best * 1e3,
        best / containers as f64 * 1e9
    );
}
