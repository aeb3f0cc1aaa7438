// timer_arst: a reloading timer with an asynchronous active-low reset (the most common reset
// style) and a capture bank: on `capture` every lane register takes the current count, so one
// enable net drives LANES*WIDTH flops. Default config: 1 lane (small, for the async-reset flow
// test); config `wide`: 24 lanes of 8 bits (192 flops on one enable, about 200 flops in all).
module timer_arst #(
    parameter WIDTH = 8,
    parameter LANES = 1
) (
    input  wire                   clk,
    input  wire                   rst_n,
    input  wire                   run,
    input  wire [WIDTH-1:0]       period,
    input  wire                   capture,
    output reg                    tick,
    output wire [LANES*WIDTH-1:0] lanes
);
    reg [WIDTH-1:0]       count;
    reg [LANES*WIDTH-1:0] bank;

    assign lanes = bank;

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

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) bank <= {(LANES*WIDTH){1'b0}};
        else if (capture) bank <= {LANES{count}};
    end
endmodule
