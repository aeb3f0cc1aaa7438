// fifo8, weak but correct: the golden's register array and pointers, but the occupancy is a valid
// bit per entry, and `count` (hence `full` and `empty`, hence every write and read enable) is
// recounted every cycle by a chain of adders over those bits, one entry after the other. Same
// ports, same cycle behaviour; more flops, and the adder chain sits on the path into every
// memory write enable, so the design is larger and slower than the golden.
module fifo8 #(
    parameter WIDTH = 8,
    parameter DEPTH_LOG2 = 3
) (
    input  wire                  clk,
    input  wire                  reset,
    input  wire                  push,
    input  wire [WIDTH-1:0]      push_data,
    output wire                  full,
    input  wire                  pop,
    output wire [WIDTH-1:0]      pop_data,
    output wire                  empty,
    output wire [DEPTH_LOG2:0]   count
);
    localparam DEPTH = 1 << DEPTH_LOG2;
    localparam [DEPTH_LOG2:0] DEPTH_COUNT = DEPTH;

    reg [WIDTH-1:0]      mem [0:DEPTH-1];
    reg [DEPTH_LOG2-1:0] rd_ptr, wr_ptr;
    reg [DEPTH-1:0]      valid;

    // the number of valid entries, added up one entry after the other
    reg [DEPTH_LOG2:0] tally;
    integer i;
    always @(*) begin
        tally = {(DEPTH_LOG2 + 1){1'b0}};
        for (i = 0; i < DEPTH; i = i + 1)
            tally = tally + {{DEPTH_LOG2{1'b0}}, valid[i]};
    end

    wire do_push = push && !full;
    wire do_pop  = pop && !empty;
    wire [DEPTH-1:0] one = {{(DEPTH - 1){1'b0}}, 1'b1};
    wire [DEPTH-1:0] filled  = do_push ? one << wr_ptr : {DEPTH{1'b0}};
    wire [DEPTH-1:0] drained = do_pop  ? one << rd_ptr : {DEPTH{1'b0}};

    assign count    = tally;
    assign full     = (count == DEPTH_COUNT);
    assign empty    = (count == {(DEPTH_LOG2 + 1){1'b0}});
    assign pop_data = mem[rd_ptr];   // first word falls through

    always @(posedge clk) begin
        if (do_push) mem[wr_ptr] <= push_data;
    end

    always @(posedge clk) begin
        if (reset) begin
            rd_ptr <= 0;
            wr_ptr <= 0;
            valid  <= {DEPTH{1'b0}};
        end else begin
            if (do_push) wr_ptr <= wr_ptr + 1'b1;
            if (do_pop)  rd_ptr <= rd_ptr + 1'b1;
            valid <= (valid | filled) & ~drained;
        end
    end
endmodule
