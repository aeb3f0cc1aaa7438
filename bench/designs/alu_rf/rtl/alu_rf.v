// alu_rf: a 16-bit datapath: a 4 x 16 register file (two read ports, one write port; r0 reads
// as zero) feeding an ALU (add, sub, and, or, xor, set-less-than signed, barrel shift left by
// the low 4 bits of operand b, move b) whose result is written back in the same cycle, with
// an optional immediate in place of operand b and zero/negative/carry flags. The critical path
// is register read -> 4:1 mux -> adder or shifter -> write-back mux -> register file.
// Written for bench/flow_scaling.py as a design the flow was not tuned on.
module alu_rf (
    input  wire        clk,
    input  wire        rst,          // synchronous, active high: clears the flags
    input  wire        issue,        // execute the instruction below this cycle
    input  wire [2:0]  op,
    input  wire [1:0]  rd,
    input  wire [1:0]  rs1,
    input  wire [1:0]  rs2,
    input  wire        use_imm,
    input  wire [15:0] imm,
    input  wire        load,         // write `imm` into rd instead of the ALU result
    output reg  [15:0] result,
    output reg         zero,
    output reg         negative,
    output reg         carry
);
    reg [15:0] regs [1:3];
    wire [15:0] a = (rs1 == 2'd0) ? 16'd0 : regs[rs1];
    wire [15:0] b_reg = (rs2 == 2'd0) ? 16'd0 : regs[rs2];
    wire [15:0] b = use_imm ? imm : b_reg;

    reg [16:0] y;
    always @(*) begin
        case (op)
            3'd0: y = {1'b0, a} + {1'b0, b};
            3'd1: y = {1'b0, a} - {1'b0, b};
            3'd2: y = {1'b0, a & b};
            3'd3: y = {1'b0, a | b};
            3'd4: y = {1'b0, a ^ b};
            3'd5: y = {16'd0, $signed(a) < $signed(b)};
            3'd6: y = {1'b0, a << b[3:0]};
            default: y = {1'b0, b};           // move
        endcase
    end
    wire [15:0] wb = load ? imm : y[15:0];

    integer i;
    always @(posedge clk) begin
        if (issue && rd != 2'd0)
            for (i = 1; i < 4; i = i + 1)
                if (rd == i[1:0]) regs[i] <= wb;
        if (issue)
            result <= wb;
        if (rst) begin
            zero <= 1'b0;
            negative <= 1'b0;
            carry <= 1'b0;
        end else if (issue && !load) begin
            zero <= (y[15:0] == 16'd0);
            negative <= y[15];
            carry <= y[16];
        end
    end
endmodule
