// fifo8, weak but correct: a shift-register FIFO. Every pop moves each stored word one place
// towards the head (a multiplexer and an enable on every entry), where the golden design moves
// two pointers. Same ports, same cycle behaviour, more area.
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

    reg [WIDTH-1:0]    slot [0:DEPTH-1];
    reg [DEPTH_LOG2:0] used;

    wire do_push = push && !full;
    wire do_pop  = pop && !empty;
    wire [DEPTH_LOG2:0] tail = do_pop ? used - 1'b1 : used;

    assign full     = (used == DEPTH);
    assign empty    = (used == 0);
    assign count    = used;
    assign pop_data = slot[0];

    genvar g;
    generate
        for (g = 0; g < DEPTH; g = g + 1) begin : entry
            localparam [DEPTH_LOG2:0] INDEX = g;
            always @(posedge clk) begin
                if (do_push && tail == INDEX)
                    slot[g] <= push_data;
                else if (do_pop && g < DEPTH - 1)
                    slot[g] <= slot[(g + 1) % DEPTH];
            end
        end
    endgenerate

    always @(posedge clk) begin
        if (reset)
            used <= 0;
        else
            used <= used + {{DEPTH_LOG2{1'b0}}, do_push} - {{DEPTH_LOG2{1'b0}}, do_pop};
    end
endmodule
