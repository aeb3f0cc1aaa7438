// __NAME__ (golden): sums `in_data` while `in_valid`, saturating at all ones; `clear` empties it.
module __NAME__ #(
    parameter WIDTH = 8
) (
    input  wire             clk,
    input  wire             reset,
    input  wire             clear,
    input  wire             in_valid,
    input  wire [WIDTH-1:0] in_data,
    output wire [WIDTH-1:0] sum,
    output wire             saturated
);
    reg [WIDTH-1:0] acc;
    wire [WIDTH:0] next = {1'b0, acc} + {1'b0, in_data};

    assign sum = acc;
    assign saturated = &acc;

    always @(posedge clk) begin
        if (reset || clear)
            acc <= {WIDTH{1'b0}};
        else if (in_valid)
            acc <= next[WIDTH] ? {WIDTH{1'b1}} : next[WIDTH-1:0];
    end
endmodule
