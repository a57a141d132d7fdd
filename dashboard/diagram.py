"""The SeqPATE data flow as a Graphviz DOT graph (drawn in the browser by st.graphviz_chart; no plotly)."""

PIPELINE_DOT = """
digraph seqpate {
  rankdir=LR; bgcolor="transparent"; nodesep=0.25; ranksep=0.45;
  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11, color="#4a5568"];
  edge [fontname="Helvetica", fontsize=9, color="#4a5568"];
  subgraph cluster_private {
    label="private side (protected)"; fontname="Helvetica"; fontsize=11; style="rounded,dashed"; color="#c53030";
    private [label="private sentences\\n(with user ids)", shape=cylinder, fillcolor="#fed7d7"];
    split [label="disjoint partition\\n(random or by user)", fillcolor="#fff5f5"];
    teachers [label="M teachers\\n(one LM per part)", fillcolor="#fed7d7"];
    agg [label="sum of teacher distributions\\non the student's candidates\\n+ Gaussian noise (σ from ε, δ, Q)",
         fillcolor="#feebc8"];
  }
  subgraph cluster_public {
    label="public side"; fontname="Helvetica"; fontsize=11; style="rounded,dashed"; color="#2b6cb0";
    prefixes [label="public prefixes", shape=cylinder, fillcolor="#bee3f8"];
    pubgpt [label="Pub-GPT\\n(public base model)", fillcolor="#ebf8ff"];
    pseudo [label="pseudo sentences", fillcolor="#bee3f8"];
    student [label="student LM", fillcolor="#c6f6d5"];
  }
  private -> split -> teachers;
  teachers -> agg [label="next-token\\ndistributions"];
  student -> agg [label="top candidates\\n(top-p / top-k) at hard tokens", style=dashed];
  agg -> student [label="noisy distribution\\n(KL loss)", color="#c05621", fontcolor="#c05621", penwidth=1.6];
  prefixes -> pubgpt [label="complete"];
  pubgpt -> pseudo;
  pseudo -> student [label="pseudo labels"];
  pseudo -> teachers [label="inputs to label", style=dotted];
}
"""
