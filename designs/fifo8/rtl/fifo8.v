// fifo8: a synchronous first-word-fall-through FIFO, DEPTH x WIDTH (default 8 x 8) in a register
// array (Yosys infers a memory and maps it to flops), synchronous active-high reset, full/empty
// flags and an occupancy count. Written for the issue-17 corpus (a design with a memory).
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

    reg [WIDTH-1:0]      mem [0:DEPTH-1];
    reg [DEPTH_LOG2-1:0] rd_ptr, wr_ptr;
    reg [DEPTH_LOG2:0]   used;

    wire do_push = push && !full;
    wire do_pop  = pop && !empty;

    assign full     = (used == DEPTH);
    assign empty    = (used == 0);
    assign count    = used;
    assign pop_data = mem[rd_ptr];   // first word falls through

    always @(posedge clk) begin
        if (do_push) mem[wr_ptr] <= push_data;
    end

    always @(posedge clk) begin
        if (reset) begin
            rd_ptr <= 0;
            wr_ptr <= 0;
            used   <= 0;
        end else begin
            if (do_push) wr_ptr <= wr_ptr + 1'b1;
            if (do_pop)  rd_ptr <= rd_ptr + 1'b1;
            used <= used + {{DEPTH_LOG2{1'b0}}, do_push} - {{DEPTH_LOG2{1'b0}}, do_pop};
        end
    end
endmodule
