// timer_arst: a reloading timer with an asynchronous active-low reset (the most common reset
// style) and a capture history: on `capture` lane 0 takes the current count and every other lane
// its predecessor's value (the last LANES captures), so one enable net drives LANES*WIDTH flops;
// the oldest lane is the output (a delay line of captures). BANK_RESET = 0: the lanes have no
// reset (a delay line needs none; the counter keeps its async reset). Default config: 1 lane,
// reset (small, for the async-reset flow test); config `wide`: 24 lanes of 8 bits without reset
// (192 flops on one enable, 201 flops in all).
module timer_arst #(
    parameter WIDTH = 8,
    parameter LANES = 1,
    parameter BANK_RESET = 1
) (
    input  wire                   clk,
    input  wire                   rst_n,
    input  wire                   run,
    input  wire [WIDTH-1:0]       period,
    input  wire                   capture,
    output reg                    tick,
    output wire [WIDTH-1:0]       oldest
);
    reg [WIDTH-1:0]       count;
    reg [LANES*WIDTH-1:0] bank;
    wire [LANES*WIDTH-1:0] shifted;   // lane 0 <- count, lane k <- lane k-1

    genvar lane;
    generate
        for (lane = 1; lane < LANES; lane = lane + 1) begin : shift
            assign shifted[lane*WIDTH +: WIDTH] = bank[(lane-1)*WIDTH +: WIDTH];
        end
    endgenerate
    assign shifted[WIDTH-1:0] = count;

    assign oldest = bank[(LANES-1)*WIDTH +: WIDTH];

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            count <= {WIDTH{1'b0}};
            tick  <= 1'b0;
        end else if (run) begin
            tick  <= (count == period);
            count <= (count == period) ? {WIDTH{1'b0}} : count + 1'b1;
        end else begin
            tick  <= 1'b0;
        end
    end

    generate
        if (BANK_RESET) begin : reset_bank
            always @(posedge clk or negedge rst_n)
                if (!rst_n) bank <= {(LANES*WIDTH){1'b0}};
                else if (capture) bank <= shifted;
        end else begin : plain_bank
            always @(posedge clk)
                if (capture) bank <= shifted;
        end
    endgenerate
endmodule
