// pipe_mult: a pipelined unsigned WIDTH x WIDTH multiplier, three register stages: operands in,
// the two half products (low and high half of b) registered, their sum out. A valid bit travels
// with the data; synchronous active-high reset on the valid bits only. Written for the issue-17
// corpus (a datapath: wide arithmetic between register banks).
module pipe_mult #(
    parameter WIDTH = 8
) (
    input  wire                 clk,
    input  wire                 reset,
    input  wire                 in_valid,
    input  wire [WIDTH-1:0]     a,
    input  wire [WIDTH-1:0]     b,
    output reg                  out_valid,
    output reg  [2*WIDTH-1:0]   product
);
    localparam HALF = WIDTH / 2;

    reg [WIDTH-1:0]        a_q, b_q;
    reg [WIDTH+HALF-1:0]   lo_part;   // a * b[HALF-1:0]
    reg [2*WIDTH-HALF-1:0] hi_part;   // a * b[WIDTH-1:HALF]
    reg                    v1, v2;

    always @(posedge clk) begin
        a_q <= a;
        b_q <= b;
        lo_part <= a_q * b_q[HALF-1:0];
        hi_part <= a_q * b_q[WIDTH-1:HALF];
        product <= {hi_part, {HALF{1'b0}}} + {{HALF{1'b0}}, lo_part};
    end

    always @(posedge clk) begin
        if (reset) begin
            v1 <= 1'b0; v2 <= 1'b0; out_valid <= 1'b0;
        end else begin
            v1 <= in_valid; v2 <= v1; out_valid <= v2;
        end
    end
endmodule
