// firdma FIR datapath, WEAK-BUT-CORRECT variant (Task B starting point): all NTAPS products and
// the whole adder tree, rounding, shift and saturation in ONE combinational path, one result per
// cycle. Functionally identical to the golden datapath; it misses the 10 ns clock on purpose.
`default_nettype none
module firdma_fir #(
    parameter int NTAPS = 16
) (
    input  wire                 clk,
    input  wire                 rst_n,
    input  wire                 clear,
    input  wire [NTAPS*16-1:0]  coefs,
    input  wire [4:0]           shift,
    input  wire                 in_valid,
    input  wire [15:0]          in_data,
    output wire                 in_ready,
    output reg                  out_valid,
    output reg  [15:0]          out_data,
    input  wire                 out_ready
);
    localparam int ACC_W = 33 + $clog2(NTAPS);

    reg [15:0] hist [NTAPS];   // hist[k] = x[n-1-k]: the samples before the incoming one

    assign in_ready = ~out_valid | out_ready;

    logic signed [ACC_W-1:0] acc;
    always @(*) begin
        acc = ACC_W'($signed(coefs[15:0]) * $signed(in_data));
        for (int k = 1; k < NTAPS; k++)
            acc = acc + ACC_W'($signed(coefs[k*16 +: 16]) * $signed(hist[k-1]));
    end

    wire signed [ACC_W-1:0] rnd = (shift == 5'd0) ? '0 : (ACC_W'(1) <<< (shift - 5'd1));
    wire signed [ACC_W-1:0] rounded = acc + rnd;
    wire signed [ACC_W-1:0] shifted = rounded >>> shift;
    wire [15:0] saturated = (shifted > ACC_W'(32767)) ? 16'h7FFF
                          : (shifted < -ACC_W'(32768)) ? 16'h8000 : shifted[15:0];

    always_ff @(posedge clk) begin
        if (!rst_n || clear) begin
            out_valid <= 1'b0;
            out_data  <= 16'd0;
            for (int i = 0; i < NTAPS; i++) hist[i] <= 16'd0;
        end else begin
            if (out_valid && out_ready) out_valid <= 1'b0;
            if (in_valid && in_ready) begin
                hist[0] <= in_data;
                for (int i = 1; i < NTAPS; i++) hist[i] <= hist[i-1];
                out_data  <= saturated;
                out_valid <= 1'b1;
            end
        end
    end
endmodule
`default_nettype wire
