"""qrouter's whole-wire tap offset is undone in the routed DEF (closer.physical.route.route): the wire
goes back to the grid row the net's own routing meets it on, with a jog to the tap. Recorded on
fifo8's routed DEF (the mem_2__3_ net whose shifted wire shorted push_data_3_'s L1M1 pad).
Two-way: a wire with no evidence of its row, or with two candidate rows, is left as written.
Without evidence of its own, the row no other net crosses is taken (recorded on timer_arst `wide`:
the bank_185_ wire written 0.185 um above its row, across _004_'s M1M2 pad on that row); with
both rows free, or both taken, it is left as written."""

from __future__ import annotations

from closer.physical.route.route import snap_offset_wires_to_net_rows

HEAD = "DESIGN t ;\nNETS 1 ;\n"
TAIL = "\nEND NETS\nEND DESIGN\n"
FIFO8_NET = """- mem_2__3_
  ( _225_ A0 ) ( _297_ A0 ) ( mem_2__3___DFFE_PP_ Q )
  + USE SIGNAL 
+ ROUTED met1 ( 55890 6105 ) ( 78430 * ) L1M1_PR 
  NEW li1 ( 67390 26010 ) L1M1_PR 
  NEW met1 ( 67390 26010 ) M1M2_PR 
  NEW met2 ( 67390 26010 ) ( * 5950 ) M1M2_PR ;"""


def test_offset_wire_returns_to_the_row_its_via_lands_on():
    text, count = snap_offset_wires_to_net_rows(HEAD + FIFO8_NET + TAIL)
    assert count == 1
    assert "+ ROUTED met1 ( 55890 5950 ) ( 78430 * ) L1M1_PR" in text
    assert "NEW met1 ( 55890 5950 ) ( * 6105 )" in text  # the jog still reaches the tap
    assert "6105 ) ( 78430" not in text


def test_wire_without_evidence_of_its_row_is_kept():
    alone = FIFO8_NET.replace("( * 5950 ) M1M2_PR", "( * 4930 ) M1M2_PR")  # lands off the wire's rows
    text, count = snap_offset_wires_to_net_rows(HEAD + alone + TAIL)
    assert count == 0 and text == HEAD + alone + TAIL


def test_wire_with_two_candidate_rows_is_kept():
    both = FIFO8_NET.replace(" ;", "\n  NEW met2 ( 60000 26010 ) ( * 6290 ) M1M2_PR ;")
    text, count = snap_offset_wires_to_net_rows(HEAD + both + TAIL)
    assert count == 0 and text == HEAD + both + TAIL


def test_wire_on_the_grid_is_untouched():
    on_grid = FIFO8_NET.replace("( 55890 6105 )", "( 55890 5950 )")
    text, count = snap_offset_wires_to_net_rows(HEAD + on_grid + TAIL)
    assert count == 0 and text == HEAD + on_grid + TAIL


WIDE_NETS = """- _004_
  ( _437_ X ) ( oldest_1___DFFE_PP_ D )
  + USE SIGNAL 
+ ROUTED li1 ( 39330 157250 ) L1M1_PR 
  NEW met1 ( 39330 157250 ) M1M2_PR 
  NEW met2 ( 39330 157250 ) ( * 156910 ) M2M3_PR 
  NEW met3 ( 39330 156910 ) ( 53590 * ) M2M3_PR 
  NEW met1 ( 53590 156910 ) M1M2_PR 
  NEW met1 ( 53590 156910 ) ( * 156755 ) ;
- bank_185_
  ( _437_ A0 ) ( _523_ A ) ( oldest_1___DFFE_PP_ Q )
  + USE SIGNAL 
+ ROUTED met1 ( 41170 157095 ) ( 59110 * ) L1M1_PR 
  NEW li1 ( 22310 156570 ) L1M1_PR 
  NEW met1 ( 22310 156570 ) ( 41170 * ) ( * 156725 ) ;"""


def test_offset_wire_without_own_evidence_goes_to_the_row_no_other_net_crosses():
    text, count = snap_offset_wires_to_net_rows(HEAD + WIDE_NETS + TAIL)
    assert count == 1
    assert "+ ROUTED met1 ( 41170 157250 ) ( 59110 * ) L1M1_PR" in text  # off _004_'s pad row 156910
    assert "NEW met1 ( 41170 157250 ) ( * 157095 )" in text  # the jog still reaches the tap
    assert "157095 ) ( 59110" not in text


def test_offset_wire_with_both_rows_free_is_kept():
    alone = WIDE_NETS.split("- bank_185_")[1]
    text, count = snap_offset_wires_to_net_rows(HEAD + "- bank_185_" + alone + TAIL)
    assert count == 0 and text == HEAD + "- bank_185_" + alone + TAIL


def test_offset_wire_with_both_rows_taken_is_kept():
    both = WIDE_NETS.replace("  NEW met1 ( 53590 156910 ) ( * 156755 ) ;",
                             "  NEW met1 ( 53590 156910 ) ( * 156755 )\n  NEW met1 ( 50000 157250 ) ( 51000 * ) ;")
    text, count = snap_offset_wires_to_net_rows(HEAD + both + TAIL)
    assert count == 0 and text == HEAD + both + TAIL


def test_other_nets_routing_on_another_layer_does_not_take_a_row():
    other_layer = WIDE_NETS.replace("  NEW met1 ( 53590 156910 ) M1M2_PR \n  NEW met1 ( 53590 156910 ) ( * 156755 ) ;",
                                    "  NEW met3 ( 53590 156910 ) ( 54000 * ) ;")
    text, count = snap_offset_wires_to_net_rows(HEAD + other_layer + TAIL)
    assert count == 0  # _004_ has no met1 on either row inside the span any more


def test_jog_of_a_nets_last_statement_goes_before_its_semicolon():
    last = WIDE_NETS.replace("""+ ROUTED met1 ( 41170 157095 ) ( 59110 * ) L1M1_PR 
  NEW li1 ( 22310 156570 ) L1M1_PR 
  NEW met1 ( 22310 156570 ) ( 41170 * ) ( * 156725 ) ;""", """+ ROUTED li1 ( 22310 156570 ) L1M1_PR 
  NEW met1 ( 22310 156570 ) ( 41170 * ) ( * 156725 )
  NEW met1 ( 41170 157095 ) ( 59110 * ) L1M1_PR ;""")
    text, count = snap_offset_wires_to_net_rows(HEAD + last + TAIL)
    assert count == 1
    assert "NEW met1 ( 41170 157250 ) ( 59110 * ) L1M1_PR \n  NEW met1 ( 41170 157250 ) ( * 157095 ) ;\n" in text
    assert text.count(";") == last.count(";") + HEAD.count(";")


# recorded on firdma small (antenna round 1's repair): the offset wire ends in a via on the net's
# own met2, whose end via is on the row 0.185 um below; both rows are free of other nets, and the
# met2 covers both, so only the point at the wire's end tells the row
FIRDMA_NET = """- _05802_
  ( _11426_ X ) ( _11675_ B ) ( _11733_ B )
  + USE SIGNAL 
+ ROUTED met1 ( 326370 183770 ) M1M2_PR 
  NEW met2 ( 326370 183770 ) ( * 181050 ) M1M2_PR 
  NEW met1 ( 326370 181050 ) ( 324070 * ) ( * 180895 ) 
  NEW met1 ( 330510 181235 ) ( 326370 * ) M1M2_PR 
  NEW met1 ( 342930 186150 ) ( 326370 * ) M1M2_PR 
  NEW met2 ( 326370 186150 ) ( * 183770 ) ;"""


def test_offset_wire_goes_to_the_row_of_the_nets_via_at_its_end():
    text, count = snap_offset_wires_to_net_rows(HEAD + FIRDMA_NET + TAIL)
    assert count == 1
    assert "NEW met1 ( 330510 181050 ) ( 326370 * ) M1M2_PR" in text  # its via on the met2's end via
    assert "NEW met1 ( 330510 181050 ) ( * 181235 )" in text  # the jog still reaches the tap
    assert "181235 ) ( 326370" not in text
    # two-way: with the net's point at the end moved off the rows, the wire has no evidence
    moved = FIRDMA_NET.replace("( * 181050 ) M1M2_PR \n  NEW met1 ( 326370 181050 ) ( 324070 * ) ( * 180895 )",
                               "( * 182410 ) M1M2_PR \n  NEW met1 ( 326370 182410 ) ( 324070 * )")
    assert moved != FIRDMA_NET
    assert snap_offset_wires_to_net_rows(HEAD + moved + TAIL) == (HEAD + moved + TAIL, 0)
