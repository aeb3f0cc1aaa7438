// 16 x 16 multiply-accumulate: registered operands, 40-bit accumulator (bench/flow_scaling.py;
// bench's macN instantiates it once per lane)
module mac16 (input wire clk, input wire rst, input wire en,
              input wire [15:0] a, input wire [15:0] b, output reg [39:0] acc);
    reg [15:0] ra, rb;
    always @(posedge clk) begin
        if (rst) begin ra <= 0; rb <= 0; acc <= 0; end
        else begin ra <= a; rb <= b; if (en) acc <= acc + ra * rb; end
    end
endmodule
