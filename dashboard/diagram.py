"""The SeqPATE data flow as a Graphviz DOT graph (drawn in the browser by st.graphviz_chart; no plotly)."""

# Four ranks wide (the private and public rows side by side in time): the edges between the rows do not set ranks
# (constraint=false) and take outside labels (xlabel). Six ranks wide, its labels read about 8 px at 1,280 px.
PIPELINE_DOT = """
digraph seqpate {
  rankdir=LR; bgcolor="transparent"; nodesep=0.6; ranksep=0.45; forcelabels=true;
  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11, color="#4a5568"];
  edge [fontname="Helvetica", fontsize=9, color="#4a5568"];
  subgraph cluster_private {
    label="private side (protected)"; labelloc="b"; fontname="Helvetica"; fontsize=11; style="rounded,dashed"; color="#c53030";
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
  student -> agg [xlabel="top candidates\\n(top-p / top-k) at hard tokens", style=dashed, constraint=false,
                 tailport=sw, headport=nw];
  agg -> student [xlabel="noisy distribution\\n(KL loss)", color="#c05621", fontcolor="#c05621", penwidth=1.6,
                 constraint=false, tailport=ne, headport=se];
  prefixes -> pubgpt [label="complete"];
  pubgpt -> pseudo;
  pseudo -> student [label="pseudo labels"];
  pseudo -> teachers [xlabel="inputs to label", style=dotted, constraint=false];
}
"""
